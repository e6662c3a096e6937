// Coffer's webhooks verify with the stock Standard Webhooks library (npm standardwebhooks) in
// raw-key mode: the key is the operator key's bytes. Its default mode expects a base64
// "whsec_" secret and refuses an operator key, which is why the README names the raw mode.
import { mock, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Webhook } from "standardwebhooks";

import { constructEvent, isDeposit } from "../src/index.js";

const fixtureDir = resolve(process.cwd(), "..", "testdata", "webhooks");

test("stock standardwebhooks verifies Coffer's fixtures in raw-key mode", () => {
  const files = readdirSync(fixtureDir).filter((f) => f.endsWith(".json"));
  assert.ok(files.length >= 10);
  for (const file of files) {
    const f = JSON.parse(readFileSync(join(fixtureDir, file), "utf8"));
    if (f.expect.error === "timestamp") continue; // its tolerance is not an option
    mock.timers.enable({ apis: ["Date"], now: f.now * 1000 }); // the fixture's receiving clock
    const wh = new Webhook(new TextEncoder().encode(f.key), { format: "raw" });
    let ok = true;
    try {
      wh.verify(f.body, f.headers, { jsonParse: false });
    } catch {
      ok = false;
    } finally {
      mock.timers.reset();
    }
    assert.equal(ok, f.expect.valid, file);
  }
});

test("signatures cross both ways with a fresh timestamp", async () => {
  const key = "sk_19ced2128f6a57e281dac410bf583a0a059bdbcdf72601ed79220743a159df4e";
  const body = "event=DEPOSIT&depositId=42&externalUserId=user-1&amount=25.00";
  const wh = new Webhook(new TextEncoder().encode(key), { format: "raw" });
  const now = new Date();
  const headers = {
    "webhook-id": "evt_interop",
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": wh.sign("evt_interop", now, body),
  };
  const event = await constructEvent(body, headers, key);
  assert.ok(isDeposit(event));
  assert.equal(event.externalUserId, "user-1");
  assert.throws(() => new Webhook(key).verify(body, headers, { jsonParse: false }));
});
