// Withdrawals in a real browser: the widget's withdraw flow under the synchronous mode (an
// operator that approves, one that refuses with code 2) and the panel's two-step finalize,
// paid on the dev chain.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { adminLogin, cfg, createSession, launch, rest, rpc, shot, until } from "./lib.mjs";

let browser;
before(async () => {
  browser = await launch();
});
after(() => browser?.close());

const closeMessage = (reason) => ({ type: "EVENT", payload: { event: "close", data: { reason } } });
// A destination nobody in Coffer holds, in its EIP-55 form, and the same with one letter's case
// flipped (a checksum error).
const destination = "0x52908400098527886E0F7030069857D2E4169EE7";
const badChecksum = "0x52908400098527886e0F7030069857D2E4169EE7";

async function openWithdraw(operatorKey, amount) {
  const session = await createSession("withdraw", operatorKey, { amount });
  const context = await browser.newContext({ viewport: { width: 640, height: 760 } });
  const page = await context.newPage();
  await page.goto(`${cfg.control}/host?src=${encodeURIComponent(session.url)}`);
  const w = page.frameLocator("#coffer");
  await w.getByRole("heading", { name: "Withdraw" }).waitFor();
  await w.getByLabel("Network").selectOption({ label: cfg.chain.name });
  await w.getByRole("radio", { name: "USDT" }).check();
  return { session, context, page, w };
}

test("withdraw, synchronous mode approved: quote, checksum checked as the user types, queued; Close posts withdraw_queued", async () => {
  const { session, context, page, w } = await openWithdraw(cfg.operators.embedded.key, "12.50");
  await w.locator("#quote").getByText("12.5 USDT").waitFor();
  const input = w.locator("#destination");
  const submit = w.getByRole("button", { name: /^Withdraw/ });
  await input.pressSequentially(badChecksum, { delay: 5 });
  await w.getByText("The address checksum does not match").waitFor();
  assert.equal(await submit.isDisabled(), true);
  await shot(page, "withdraw-bad-checksum");
  await input.fill(destination);
  await w.getByText("Valid address.").waitFor();
  assert.equal(await submit.isDisabled(), false);
  await shot(page, "withdraw-ready");
  await submit.click();
  await w.getByRole("heading", { name: "Withdrawal requested" }).waitFor();
  const result = w.locator("#withdraw-result");
  assert.equal(await result.getAttribute("data-status"), "PENDING");
  await shot(page, "withdraw-queued");

  // The withdrawal exists, PENDING, for the panel.
  const token = await adminLogin();
  const list = await rest("GET", `/admin/withdrawals?operatorId=${cfg.operators.embedded.id}&status=PENDING`, { bearer: token });
  assert.equal(list.status, 200);
  const mine = list.body.find((x) => x.sessionRef === session.sessionRef);
  assert.ok(mine, "the submitted withdrawal is listed");
  assert.equal(mine.cryptoAmountSent, "12.500000");
  assert.equal(mine.address, destination);

  await w.getByRole("button", { name: "Close", exact: true }).click();
  const messages = await until("close message", () => page.evaluate(() => (window.messages.length ? window.messages : null)), 5000);
  assert.deepEqual(messages.map((m) => m.data), [closeMessage("withdraw_queued")]);
  await context.close();
});

test("withdraw refused by the operator with code 2: the user sees the spec's message, nothing is recorded", async () => {
  const { session, context, page, w } = await openWithdraw(cfg.operators.refusing.key, "30.00");
  await w.locator("#quote").getByText("30 USDT").waitFor();
  await w.locator("#destination").fill(destination);
  await w.getByRole("button", { name: /^Withdraw/ }).click();
  await w.getByRole("heading", { name: "Withdrawal not possible" }).waitFor();
  const denied = w.locator("#withdraw-denied");
  assert.equal((await denied.textContent()).trim(), "Insufficient balance for withdrawal");
  assert.equal(await denied.getAttribute("data-error-code"), "2");
  await shot(page, "withdraw-denied");
  const token = await adminLogin();
  const list = await rest("GET", `/admin/withdrawals?operatorId=${cfg.operators.refusing.id}`, { bearer: token });
  assert.equal(list.status, 200);
  assert.equal(list.body.filter((x) => x.sessionRef === session.sessionRef).length, 0);
  await context.close();
});

test("panel: a withdrawal moved PENDING → PROCESSING → COMPLETED is paid on-chain and shown completed", async () => {
  // A withdrawal submitted from the widget's API, approved by the operator's receiver.
  const session = await createSession("withdraw", cfg.operators.embedded.key, { amount: "7.00" });
  const sub = await rest("POST", "/withdraw/direct-transfer", { body: { sid: session.sid, address: destination, currency: "USDT", chainId: cfg.chain.id } });
  assert.equal(sub.status, 200);
  const id = sub.body.data.withdrawRequestId;

  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  await page.goto(`${cfg.panelUrl}/`);
  await page.getByLabel("Email").fill(cfg.admin.email);
  await page.getByLabel("Password").fill(cfg.admin.password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Withdrawals" }).waitFor();
  await page.getByRole("link", { name: id.slice(0, 8) }).click();
  const status = page.locator("#w-status");
  await until("PENDING", async () => (await status.textContent()) === "PENDING");
  await shot(page, "panel-withdrawal-pending");

  const step = async (label, note) => {
    await page.getByLabel("Note (kept in the history)").fill(note);
    await page.getByRole("button", { name: label, exact: true }).click();
    await page.getByRole("button", { name: `Confirm: ${label}` }).click();
  };
  await step("Move to PROCESSING", "identity checked");
  await until("PROCESSING", async () => (await status.textContent()) === "PROCESSING", 15000);
  await shot(page, "panel-withdrawal-processing");
  await step("Complete (pay out)", "paid from the hot wallet");
  await until("COMPLETED", async () => (await status.textContent()) === "COMPLETED", 60000, 250);
  await page.getByText(/0x[0-9a-f]{64}/).first().waitFor();
  await shot(page, "panel-withdrawal-completed");

  const token = await adminLogin();
  const list = await rest("GET", `/admin/withdrawals?status=COMPLETED&operatorId=${cfg.operators.embedded.id}`, { bearer: token });
  const done = list.body.find((x) => x.withdrawRequestId === id);
  assert.ok(done?.settlementTxHash, "COMPLETED with a settlement hash");
  assert.equal(done.adminNote, "paid from the hot wallet");
  await page.close();
});

test("panel: the status-change buttons are the server's allowed actions; a withdrawal whose payout is on its way has none", async () => {
  // Two PROCESSING withdrawals recorded by the Go test: one open, one whose payout is queued.
  const { processing, paying } = cfg.withdrawals;
  const token = await adminLogin();
  const allowed = async (id) => {
    const res = await rpc("AdminService", "GetAdminWithdrawal", { withdrawRequestId: id }, token);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.allowedActions ?? [];
  };
  assert.deepEqual(await allowed(processing), ["ADMIN_WITHDRAWAL_ACTION_COMPLETE", "ADMIN_WITHDRAWAL_ACTION_REJECT"]);
  assert.deepEqual(await allowed(paying), []);

  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  await page.goto(`${cfg.panelUrl}/`);
  await page.getByLabel("Email").fill(cfg.admin.email);
  await page.getByLabel("Password").fill(cfg.admin.password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Withdrawals" }).waitFor();
  const open = async (id) => {
    await page.goto(`${cfg.panelUrl}/#/withdrawals/${id}`);
    await page.getByRole("heading", { name: `Withdrawal ${id.slice(0, 8)}` }).waitFor();
    await page.getByRole("heading", { name: "History" }).waitFor();
    assert.equal(await page.locator("#w-status").textContent(), "PROCESSING");
  };
  const buttons = () => page.getByRole("region", { name: "Status change" }).getByRole("button").allTextContents();

  // The open one: the second step's two buttons.
  await open(processing);
  assert.deepEqual(await buttons(), ["Complete (pay out)", "Reject"]);
  await shot(page, "panel-withdrawal-processing-actions");

  // The paying one, same status: no Complete, no Reject, no status-change section at all.
  await open(paying);
  assert.equal(await page.getByRole("region", { name: "Status change" }).count(), 0);
  assert.equal(await page.getByRole("button", { name: "Complete (pay out)" }).count(), 0);
  assert.equal(await page.getByRole("button", { name: "Reject" }).count(), 0);
  await shot(page, "panel-withdrawal-paying-no-actions");
  await page.close();
});
