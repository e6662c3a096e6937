// Coffer webhooks for operators: verify the Standard Webhooks signature and parse the
// application/x-www-form-urlencoded body into the generated event messages.
//
//   const raw = await request.text();            // the raw body, before any form parsing
//   await verify(request.headers, raw, process.env.COFFER_OPERATOR_KEY!);
//   const event = parse(raw);
//   if (isTest(event)) return ack();             // acknowledge, no side effects
//   if (isDeposit(event)) credit(event.externalUserId, event.amountInDollar, event.idempotencyKey);
//   return Response.json({ error: 0, description: "ok" });
//
// Runs on Node >= 20, Deno, Bun, browsers and edge runtimes (Web Crypto only).

import { create, ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { TimestampSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import {
  DepositEventSchema,
  WithdrawCompleteEventSchema,
  WithdrawRequestEventSchema,
  type DepositEvent,
  type WithdrawCompleteEvent,
  type WithdrawRequestEvent,
} from "./gen/coffer/v1/events_pb.js";

/** The three webhook events. */
export type WebhookEvent = DepositEvent | WithdrawRequestEvent | WithdrawCompleteEvent;

/** The event id: the same on every attempt of one event (deduplicate on it). */
export const HEADER_ID = "webhook-id";
/** The attempt's time, Unix seconds. */
export const HEADER_TIMESTAMP = "webhook-timestamp";
/** "v1,<base64>" signatures, space-separated (one per valid key during a rotation). */
export const HEADER_SIGNATURE = "webhook-signature";
/** How far a timestamp may be from the receiver's clock, either way. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Why verification failed. */
export type VerificationFailure = "missing_header" | "timestamp" | "signature";

/** Thrown by verify. */
export class WebhookVerificationError extends Error {
  readonly reason: VerificationFailure;
  constructor(reason: VerificationFailure, message: string) {
    super(`webhook: ${message}`);
    this.name = "WebhookVerificationError";
    this.reason = reason;
  }
}

/** Thrown by parse. */
export class WebhookParseError extends Error {
  constructor(message: string) {
    super(`webhook: ${message}`);
    this.name = "WebhookParseError";
  }
}

/** Request headers: a Fetch Headers object, or Node's IncomingHttpHeaders-like record. */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** The receiver's clock: a Date or milliseconds since the epoch. Default: now. */
  now?: Date | number;
  /** Allowed distance between the timestamp and now. Default 300 (5 minutes). */
  toleranceSeconds?: number;
}

function header(headers: HeadersLike, name: string): string {
  if (typeof (headers as Headers).get === "function") {
    return (headers as Headers).get(name) ?? "";
  }
  const record = headers as Record<string, string | string[] | undefined>;
  for (const key of Object.keys(record)) {
    if (key.toLowerCase() === name) {
      const v = record[key];
      return (Array.isArray(v) ? v[0] : v) ?? "";
    }
  }
  return "";
}

const encoder = new TextEncoder();

function bytes(v: string | Uint8Array): Uint8Array {
  return typeof v === "string" ? encoder.encode(v) : v;
}

function decodeBase64(s: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) {
    return undefined;
  }
  try {
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return undefined;
  }
}

/** Compares in time that depends only on the lengths. */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/**
 * Checks a webhook's signature: the webhook-timestamp must be within the tolerance of now and
 * one of the webhook-signature entries must be v1,base64(HMAC-SHA256(key, id.timestamp.body)).
 * key is the operator key ("sk_..."); body is the raw request body, byte for byte.
 * Throws WebhookVerificationError.
 */
export async function verify(
  headers: HeadersLike,
  body: string | Uint8Array,
  key: string | Uint8Array,
  options: VerifyOptions = {},
): Promise<void> {
  const id = header(headers, HEADER_ID);
  const stamp = header(headers, HEADER_TIMESTAMP);
  const signatures = header(headers, HEADER_SIGNATURE);
  for (const [name, value] of [[HEADER_ID, id], [HEADER_TIMESTAMP, stamp], [HEADER_SIGNATURE, signatures]]) {
    if (value === "") throw new WebhookVerificationError("missing_header", `missing ${name} header`);
  }
  const keyBytes = bytes(key);
  if (keyBytes.length === 0) throw new WebhookVerificationError("signature", "empty key");
  if (!/^\d+$/.test(stamp)) {
    throw new WebhookVerificationError("timestamp", `malformed ${HEADER_TIMESTAMP} ${JSON.stringify(stamp)}`);
  }
  const now = options.now === undefined ? Date.now() : options.now instanceof Date ? options.now.getTime() : options.now;
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const age = now / 1000 - Number(stamp);
  if (age > tolerance) throw new WebhookVerificationError("timestamp", `signed ${Math.floor(age)}s ago`);
  if (-age > tolerance) throw new WebhookVerificationError("timestamp", `signed ${Math.floor(-age)}s in the future`);

  const hmacKey = await crypto.subtle.importKey("raw", keyBytes as BufferSource, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const bodyBytes = bytes(body);
  const prefix = encoder.encode(`${id}.${stamp}.`);
  const signed = new Uint8Array(prefix.length + bodyBytes.length);
  signed.set(prefix);
  signed.set(bodyBytes, prefix.length);
  const expected = new Uint8Array(await crypto.subtle.sign("HMAC", hmacKey, signed as BufferSource));
  let matched = false;
  for (const entry of signatures.split(" ")) {
    const comma = entry.indexOf(",");
    if (comma < 0 || entry.slice(0, comma) !== "v1") continue;
    const candidate = decodeBase64(entry.slice(comma + 1));
    if (candidate && constantTimeEqual(candidate, expected)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError("signature", "no matching signature");
}

const schemas: Record<string, DescMessage> = {
  DEPOSIT: DepositEventSchema,
  WITHDRAW_REQUEST: WithdrawRequestEventSchema,
  WITHDRAW_COMPLETE: WithdrawCompleteEventSchema,
};

const INT64 = /^-?\d{1,20}$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

function parseTimestamp(s: string): Timestamp | undefined {
  const m = RFC3339.exec(s);
  if (!m) return undefined;
  const [y, mo, d, h, mi, sec] = m.slice(1, 7).map(Number);
  const ms = Date.UTC(y, mo - 1, d, h, mi, sec);
  const back = new Date(ms);
  if (Number.isNaN(ms) || back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d ||
      back.getUTCHours() !== h || back.getUTCMinutes() !== mi || back.getUTCSeconds() !== sec) {
    return undefined;
  }
  let seconds = BigInt(ms / 1000);
  if (m[8] === undefined) {
    const offset = (Number(m[10]) * 60 + Number(m[11])) * 60;
    seconds -= BigInt(m[9] === "+" ? offset : -offset);
  }
  const nanos = m[7] === undefined ? 0 : Number(m[7].padEnd(9, "0"));
  return create(TimestampSchema, { seconds, nanos });
}

function parseValue(field: DescField, raw: string): unknown {
  const bad = (why: string) => new WebhookParseError(`field ${field.jsonName}: ${JSON.stringify(raw)} ${why}`);
  if (field.fieldKind === "message" && field.message.typeName === TimestampSchema.typeName) {
    const ts = parseTimestamp(raw);
    if (!ts) throw bad("is not an RFC 3339 timestamp");
    return ts;
  }
  if (field.fieldKind !== "scalar") throw bad(`has unsupported kind ${field.fieldKind}`);
  switch (field.scalar) {
    case ScalarType.STRING:
      return raw;
    case ScalarType.BOOL:
      if (raw === "true") return true;
      if (raw === "false") return false;
      throw bad("is not true or false");
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
    case ScalarType.UINT64:
    case ScalarType.FIXED64: {
      const unsigned = field.scalar === ScalarType.UINT64 || field.scalar === ScalarType.FIXED64;
      if (!INT64.test(raw)) throw bad("is not an integer");
      const n = BigInt(raw);
      if (unsigned ? n < 0n || n > UINT64_MAX : n < INT64_MIN || n > INT64_MAX) throw bad("is out of range");
      return field.longAsString ? n.toString() : n;
    }
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
    case ScalarType.UINT32:
    case ScalarType.FIXED32: {
      const unsigned = field.scalar === ScalarType.UINT32 || field.scalar === ScalarType.FIXED32;
      if (!/^-?\d{1,10}$/.test(raw)) throw bad("is not an integer");
      const n = Number(raw);
      if (unsigned ? n < 0 || n > 0xffffffff : n < -0x80000000 || n > 0x7fffffff) throw bad("is out of range");
      return n;
    }
  }
  throw bad("has an unsupported type");
}

/**
 * Reads a webhook body into its event message, chosen by the event field. "null" and "" are
 * absent: optional fields stay undefined, others keep their zero value. Unknown keys are
 * ignored (newer servers may add fields); a repeated key, a malformed value or an unknown
 * event throws WebhookParseError. Verify the signature first.
 */
export function parse(body: string | Uint8Array): WebhookEvent {
  const text = typeof body === "string" ? body : new TextDecoder("utf-8", { fatal: true }).decode(body);
  const params = new URLSearchParams(text);
  const seen = new Set<string>();
  for (const [k] of params) {
    if (seen.has(k)) throw new WebhookParseError(`key ${JSON.stringify(k)} appears more than once`);
    seen.add(k);
  }
  const event = params.get("event");
  if (event === null || event === "" || event === "null") {
    throw new WebhookParseError("unknown event: the body has no event field");
  }
  const schema = Object.hasOwn(schemas, event) ? schemas[event] : undefined;
  if (!schema) throw new WebhookParseError(`unknown event ${JSON.stringify(event)}`);
  const init: Record<string, unknown> = {};
  for (const field of schema.fields) {
    const raw = params.get(field.jsonName);
    if (raw === null || raw === "" || raw === "null") continue;
    init[field.localName] = parseValue(field, raw);
  }
  return create(schema, init) as unknown as WebhookEvent;
}

/** True for a test event (test=true): acknowledge it and skip every real side effect. */
export function isTest(event: WebhookEvent): boolean {
  return event.test === true;
}

export function isDeposit(event: WebhookEvent): event is DepositEvent {
  return event.$typeName === "coffer.v1.DepositEvent";
}

export function isWithdrawRequest(event: WebhookEvent): event is WithdrawRequestEvent {
  return event.$typeName === "coffer.v1.WithdrawRequestEvent";
}

export function isWithdrawComplete(event: WebhookEvent): event is WithdrawCompleteEvent {
  return event.$typeName === "coffer.v1.WithdrawCompleteEvent";
}

/**
 * Verifies a webhook's signature against its raw body and the operator key, then parses it:
 * nothing is parsed from a body whose signature does not verify. Throws
 * WebhookVerificationError or WebhookParseError.
 */
export async function constructEvent(
  body: string | Uint8Array,
  headers: HeadersLike,
  key: string | Uint8Array,
  options: VerifyOptions = {},
): Promise<WebhookEvent> {
  await verify(headers, body, key, options);
  return parse(body);
}

/**
 * The receiver's JSON answer. error 0 acknowledges (and approves a synchronous
 * WITHDRAW_REQUEST); 1–9 deny it with the spec's message; another non-zero code denies it
 * with description shown to the user.
 */
export interface Reply {
  error: number;
  description: string;
  /** The operator's own id for a credited DEPOSIT (optional). */
  transactionId?: string;
}

/** The WITHDRAW_REQUEST reply codes of the spec. */
export const ReplyCode = {
  OK: 0,
  DECLINED_BY_OPERATOR: 1,
  INSUFFICIENT_BALANCE: 2,
  TEMPORARILY_UNAVAILABLE: 3,
  USER_NOT_ELIGIBLE: 4,
  DAILY_LIMIT_EXCEEDED: 5,
  AMOUNT_TOO_LOW: 6,
  AMOUNT_TOO_HIGH: 7,
  VERIFICATION_REQUIRED: 8,
  ACCOUNT_SUSPENDED: 9,
} as const;
