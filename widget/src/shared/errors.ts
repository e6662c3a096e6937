// Coffer's errors arrive as Connect errors carrying a google.rpc.ErrorInfo detail whose
// reason is the API's CODE (SESSION_EXPIRED, WITHDRAW_DENIED, ...) and whose metadata holds
// extra fields (errorCode, field). ErrorInfo is decoded by hand from its three fields rather
// than by generating google/rpc for one message.
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";

export interface ApiError {
  code: Code;
  /** The ErrorInfo reason: Coffer's error CODE, or "" when absent (network failure). */
  reason: string;
  metadata: Record<string, string>;
  /** The server's human-readable message (the user-facing text for WITHDRAW_DENIED). */
  message: string;
}

const errorInfoType = "google.rpc.ErrorInfo";

export function apiError(err: unknown): ApiError {
  const ce = ConnectError.from(err);
  const out: ApiError = { code: ce.code, reason: "", metadata: {}, message: ce.rawMessage };
  for (const d of ce.details) {
    if (!("type" in d) || d.type !== errorInfoType || !(d.value instanceof Uint8Array)) continue;
    const r = new BinaryReader(d.value);
    while (r.pos < r.len) {
      const [field, wireType] = r.tag();
      if (field === 1 && wireType === 2) out.reason = r.string();
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
        out.metadata[k] = v;
      } else r.skip(wireType);
    }
  }
  return out;
}
