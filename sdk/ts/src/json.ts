// 64-bit integers arrive as bigint, which JSON.stringify refuses. Every message a client
// returns gets a non-enumerable toJSON that renders it as the API's JSON (int64 as decimal
// strings, enums by name, camelCase fields), nested messages included, so logging or storing
// a response just works.
import { toJson, type DescMessage, type Message } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";

/** Renders a message as the API's JSON (what JSON.stringify gives for client results). */
export function toJSON(schema: DescMessage, message: Message): unknown {
  return toJson(schema, message, { alwaysEmitImplicit: false });
}

function attach(schema: DescMessage, message: Message): void {
  if (Object.prototype.hasOwnProperty.call(message, "toJSON")) return;
  Object.defineProperty(message, "toJSON", {
    value(): unknown {
      return toJSON(schema, message);
    },
    enumerable: false,
  });
  const record = message as unknown as Record<string, unknown>;
  for (const field of schema.fields) {
    const value = record[field.localName];
    if (value === undefined || value === null) continue;
    if (field.fieldKind === "message") attach(field.message, value as Message);
    else if (field.fieldKind === "list" && field.listKind === "message") {
      for (const item of value as Message[]) attach(field.message, item);
    } else if (field.fieldKind === "map" && field.mapKind === "message") {
      for (const item of Object.values(value as Record<string, Message>)) attach(field.message, item);
    }
  }
  for (const oneof of schema.oneofs) {
    const value = record[oneof.localName] as { case?: string; value?: unknown } | undefined;
    const field = oneof.fields.find((f) => f.localName === value?.case);
    if (field?.fieldKind === "message" && value?.value) attach(field.message, value.value as Message);
  }
}

/** Makes every unary response serialisable with JSON.stringify. */
export const jsonSafe: Interceptor = (next) => async (req) => {
  const res = await next(req);
  if (!res.stream) attach(res.method.output, res.message as Message);
  return res;
};
