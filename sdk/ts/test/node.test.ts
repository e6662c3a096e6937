import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

import { INTERNAL_ERROR_DESCRIPTION, webhookHandler } from "../src/node.js";

// What was seen: when the operator's handle threw, webhookHandler answered the error's message
// ("connect ECONNREFUSED 10.0.3.7:5432") as the 500's description, which Coffer records with
// the delivery attempt: the operator's internal details ended up in Coffer's records. The
// answer now carries a fixed text; the error goes to the operator's onError hook.
test("webhookHandler: a throwing handler answers 500 with a fixed text, the error to onError", async () => {
  const key = "sk_handler";
  const body = "event=DEPOSIT&depositId=7&idempotencyKey=1337%3A0xabc%3A0&externalUserId=u&amount=1&type=ERC20&chainId=1337";
  const internal = new Error("connect ECONNREFUSED 10.0.3.7:5432");
  for (const withHook of [false, true]) {
    const logged: unknown[] = [];
    const options = withHook ? { onError: (err: unknown) => logged.push(err) } : {};
    const server = createServer(webhookHandler(key, () => { throw internal; }, options));
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    try {
      const ts = Math.floor(Date.now() / 1000);
      const signature = "v1," + createHmac("sha256", key).update(`evt-1.${ts}.${body}`).digest("base64");
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", "webhook-id": "evt-1", "webhook-timestamp": String(ts), "webhook-signature": signature },
        body,
      });
      const text = await res.text();
      assert.equal(res.status, 500, text);
      assert.deepEqual(JSON.parse(text), { error: 3, description: INTERNAL_ERROR_DESCRIPTION });
      assert.ok(!text.includes("10.0.3.7"), text);
      assert.deepEqual(logged, withHook ? [internal] : []);
    } finally {
      await new Promise((done) => server.close(done));
    }
  }
});
