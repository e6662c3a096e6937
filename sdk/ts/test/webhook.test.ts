import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createHmac } from "node:crypto";

import { equals, fromJson, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import {
  DepositEventSchema,
  WithdrawCompleteEventSchema,
  WithdrawRequestEventSchema,
} from "../src/gen/coffer/v1/events_pb.js";
import {
  isDeposit,
  isTest,
  isWithdrawComplete,
  isWithdrawRequest,
  parse,
  verify,
  WebhookParseError,
  WebhookVerificationError,
  type VerificationFailure,
} from "../src/index.js";

// Webhooks as Coffer's server sends them, written by
// `go test ./server/internal/webhook -run CrossSDK -update`; the Go SDK tests read the same
// files and must reach the same verdicts and values. npm test runs from sdk/ts.
const fixtureDir = resolve(process.cwd(), "..", "testdata", "webhooks");

interface Fixture {
  description: string;
  key: string;
  headers: Record<string, string>;
  body: string;
  now: number;
  expect: { valid: boolean; error?: string; event?: string; test?: boolean; message?: JsonValue };
}

const schemas: Record<string, DescMessage> = {
  DEPOSIT: DepositEventSchema,
  WITHDRAW_REQUEST: WithdrawRequestEventSchema,
  WITHDRAW_COMPLETE: WithdrawCompleteEventSchema,
};

async function failure(p: Promise<void>): Promise<VerificationFailure | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    assert.ok(e instanceof WebhookVerificationError, String(e));
    return e.reason;
  }
}

const files = readdirSync(fixtureDir).filter((f) => f.endsWith(".json")).sort();

test("there are server fixtures", () => {
  assert.ok(files.length >= 10, `${files.length} fixtures in ${fixtureDir}`);
});

for (const file of files) {
  const f = JSON.parse(readFileSync(join(fixtureDir, file), "utf8")) as Fixture;
  test(`fixture ${file}: ${f.description}`, async () => {
    const got = await failure(verify(f.headers, f.body, f.key, { now: f.now * 1000 }));
    if (!f.expect.valid) {
      assert.equal(got, f.expect.error);
      return;
    }
    assert.equal(got, undefined);
    // The same webhook through a Fetch Headers object and as bytes.
    assert.equal(await failure(verify(new Headers(f.headers), new TextEncoder().encode(f.body), f.key, { now: new Date(f.now * 1000) })), undefined);

    const event = parse(f.body);
    const schema = schemas[f.expect.event!];
    assert.ok(schema, f.expect.event);
    assert.equal(event.event, f.expect.event);
    assert.equal(isTest(event), f.expect.test ?? false);
    const want = fromJson(schema, f.expect.message!);
    assert.ok(equals(schema, event as never, want as never), `parsed ${JSON.stringify(event, bigints)}\nwant ${JSON.stringify(want, bigints)}`);
    if (file === "deposit_no_session.json") {
      assert.ok(isDeposit(event));
      assert.equal(event.sessionRef, undefined);
      assert.equal(event.sessionAmount, undefined);
      assert.equal(event.operatorReference, undefined);
      assert.equal(event.contractAddress, undefined);
      assert.equal(event.depositId, 1002n);
    }
    // operatorReference: the session's order id, or undefined when the body says "null".
    const reference: Record<string, string | undefined> = {
      "deposit_session.json": "order-1001",
      "withdraw_request.json": "payout 42/β & co",
      "withdraw_complete.json": undefined,
    };
    if (file in reference) {
      assert.equal(event.operatorReference, reference[file]);
      assert.ok(f.body.includes("operatorReference=" + (reference[file] === undefined ? "null" : "")));
    }
    if (file === "test_deposit.json") {
      assert.ok(isDeposit(event) && event.depositId < 0n && event.depositId >= -(2n ** 53n - 1n));
    }
  });
}

function bigints(_: string, v: unknown) {
  return typeof v === "bigint" ? v.toString() : v;
}

test("Standard Webhooks reference vector", async () => {
  // libraries/go/webhook_test.go (TestWebhookSign) in github.com/standard-webhooks/standard-webhooks:
  // the secret is whsec_ + base64 of the key.
  const key = Uint8Array.from(atob("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), (c) => c.charCodeAt(0));
  const headers = {
    "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
    "webhook-timestamp": "1614265330",
    "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
  };
  const now = 1614265330 * 1000;
  assert.equal(await failure(verify(headers, '{"test": 2432232314}', key, { now })), undefined);
  assert.equal(await failure(verify(headers, '{"test": 2432232315}', key, { now })), "signature");
});

function sign(key: string, id: string, ts: number, body: string): string {
  return "v1," + createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64");
}

test("verify: headers, tolerance, signature lists", async () => {
  const key = "sk_new";
  const body = "event=DEPOSIT&depositId=1";
  const ts = 1795000000;
  const at = (s: number) => ({ now: s * 1000 });
  const h = (over: Record<string, string | undefined> = {}) => {
    const base: Record<string, string | undefined> = {
      "Webhook-Id": "id-1",
      "Webhook-Timestamp": String(ts),
      "Webhook-Signature": `${sign("sk_other", "id-1", ts, body)} ${sign(key, "id-1", ts, body)}`,
    };
    return { ...base, ...over };
  };
  const cases: [string, () => Promise<void>, VerificationFailure | undefined][] = [
    ["valid, mixed-case header names", () => verify(h(), body, key, at(ts)), undefined],
    ["Node's array header values", () => verify({ "webhook-id": ["id-1"], "webhook-timestamp": [String(ts)], "webhook-signature": [sign(key, "id-1", ts, body)] }, body, key, at(ts)), undefined],
    ["exactly 5 minutes old", () => verify(h(), body, key, at(ts + 300)), undefined],
    ["5m01s old", () => verify(h(), body, key, at(ts + 301)), "timestamp"],
    ["4 minutes ahead (clock skew)", () => verify(h(), body, key, at(ts - 240)), undefined],
    ["6 minutes ahead", () => verify(h(), body, key, at(ts - 360)), "timestamp"],
    ["custom tolerance", () => verify(h(), body, key, { now: (ts + 30) * 1000, toleranceSeconds: 10 }), "timestamp"],
    ["tampered body", () => verify(h(), body + "0", key, at(ts)), "signature"],
    ["other key", () => verify(h(), body, "sk_nobody", at(ts)), "signature"],
    ["empty key", () => verify(h(), body, "", at(ts)), "signature"],
    ["other id", () => verify(h({ "Webhook-Id": "id-2" }), body, key, at(ts)), "signature"],
    ["no id", () => verify(h({ "Webhook-Id": undefined }), body, key, at(ts)), "missing_header"],
    ["no timestamp", () => verify(h({ "Webhook-Timestamp": undefined }), body, key, at(ts)), "missing_header"],
    ["no signature", () => verify(h({ "Webhook-Signature": "" }), body, key, at(ts)), "missing_header"],
    ["signed timestamp", () => verify(h({ "Webhook-Timestamp": `+${ts}` }), body, key, at(ts)), "timestamp"],
    ["timestamp not a number", () => verify(h({ "Webhook-Timestamp": "soon" }), body, key, at(ts)), "timestamp"],
    ["another version", () => verify(h({ "Webhook-Signature": sign(key, "id-1", ts, body).replace("v1,", "v2,") }), body, key, at(ts)), "signature"],
    ["bad base64", () => verify(h({ "Webhook-Signature": "v1,!!!!" }), body, key, at(ts)), "signature"],
  ];
  for (const [name, run, want] of cases) {
    assert.equal(await failure(run()), want, name);
  }
});

test("parse: null and empty are absent, types, refusals", () => {
  const d = parse(
    "event=DEPOSIT&depositId=-4503599627370495&sessionRef=null&sessionAmount=&amount=1&externalUserId=u+1%262" +
      "&chainId=1337&confirmedAt=2026-11-22T06%3A38%3A20.719123%2B01%3A00&test=true&futureField=x",
  );
  assert.ok(isDeposit(d) && !isWithdrawRequest(d) && !isWithdrawComplete(d));
  assert.equal(d.sessionRef, undefined);
  assert.equal(d.sessionAmount, undefined);
  assert.equal(d.externalUserId, "u 1&2");
  assert.equal(d.depositId, -4503599627370495n);
  assert.equal(d.chainId, 1337n);
  assert.equal(d.confirmedAt?.seconds, BigInt(Date.UTC(2026, 10, 22, 5, 38, 20) / 1000));
  assert.equal(d.confirmedAt?.nanos, 719123000);
  assert.equal(d.idempotencyKey, "");
  assert.ok(isTest(d));
  assert.ok(!isTest(parse("event=WITHDRAW_REQUEST&test=false")));
  assert.ok(isWithdrawRequest(parse("event=WITHDRAW_REQUEST&cryptoAmount=null")));
  assert.ok(isWithdrawComplete(parse(new TextEncoder().encode("event=WITHDRAW_COMPLETE"))));

  for (const [body, mention] of [
    ["event=REFUND", 'unknown event "REFUND"'],
    ["event=toString", 'unknown event "toString"'],
    ["amount=1", "no event field"],
    ["event=null", "no event field"],
    ["event=DEPOSIT&amount=1&amount=2", '"amount" appears more than once'],
    ["event=DEPOSIT&depositId=4x", "depositId"],
    ["event=DEPOSIT&depositId=9223372036854775808", "out of range"],
    ["event=DEPOSIT&confirmedAt=yesterday", "confirmedAt"],
    ["event=DEPOSIT&confirmedAt=2026-02-30T00%3A00%3A00Z", "confirmedAt"],
    ["event=DEPOSIT&test=yes", "test"],
  ]) {
    assert.throws(() => parse(body), (e: unknown) => e instanceof WebhookParseError && e.message.includes(mention), body);
  }
});
