// Coffer's errors are Connect errors carrying a google.rpc.ErrorInfo detail (domain
// "coffer.v1") whose reason is Coffer's code and whose metadata names the request field and
// other facts (errorCode of WITHDRAW_DENIED). ErrorInfo is decoded from its three fields here
// rather than generating google/rpc for one message.
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { ConnectError } from "@connectrpc/connect";

/** Coffer's error codes (README, "Errors"). */
export const ErrorCodes = [
  "INVALID_ARGUMENT", "UNAUTHENTICATED", "FORBIDDEN", "NOT_FOUND", "METHOD_NOT_ALLOWED", "CONFLICT",
  "SESSION_EXPIRED", "PAYLOAD_TOO_LARGE", "REQUEST_TIMEOUT", "UNSUPPORTED_MEDIA_TYPE", "WITHDRAW_DENIED",
  "FAILED_PRECONDITION", "RATE_LIMITED", "INTERNAL", "NOT_IMPLEMENTED", "UNAVAILABLE",
] as const;

/** One of Coffer's error codes. */
export type ErrorCode = (typeof ErrorCodes)[number];

/** The ErrorInfo domain of Coffer's errors. */
export const ERROR_DOMAIN = "coffer.v1";

interface ErrorInfo {
  reason: string;
  domain: string;
  metadata: Record<string, string>;
}

function errorInfo(err: unknown): ErrorInfo | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  for (const d of err.details) {
    if (!("type" in d) || d.type !== "google.rpc.ErrorInfo" || !(d.value instanceof Uint8Array)) continue;
    const info: ErrorInfo = { reason: "", domain: "", metadata: {} };
    const r = new BinaryReader(d.value);
    while (r.pos < r.len) {
      const [field, wireType] = r.tag();
      if (field === 1 && wireType === 2) info.reason = r.string();
      else if (field === 2 && wireType === 2) info.domain = r.string();
      else if (field === 3 && wireType === 2) {
        const entry = new BinaryReader(r.bytes());
        let k = "";
        let v = "";
        while (entry.pos < entry.len) {
          const [f, wt] = entry.tag();
          if (f === 1 && wt === 2) k = entry.string();
          else if (f === 2 && wt === 2) v = entry.string();
          else entry.skip(wt);
        }
        info.metadata[k] = v;
      } else r.skip(wireType);
    }
    if (info.domain === ERROR_DOMAIN) return info;
  }
  return undefined;
}

/** Coffer's code of a failed call ("SESSION_EXPIRED", ...), or "" when it carries none. */
export function errorCode(err: unknown): ErrorCode | "" {
  return (errorInfo(err)?.reason ?? "") as ErrorCode | "";
}

/** The request field an INVALID_ARGUMENT (or CONFLICT) names ("amount"), or "". */
export function errorField(err: unknown): string {
  return errorInfo(err)?.metadata.field ?? "";
}

/** Another fact a failed call carries by name, e.g. "errorCode" of WITHDRAW_DENIED, or "". */
export function errorDetail(err: unknown, name: string): string {
  return errorInfo(err)?.metadata[name] ?? "";
}
