// `coffer dev`'s "Pay with the dev wallet" button: the Go test runs this Coffer with the dev
// chain's faucet key, as `coffer dev` does, so the widget offers it on the deposit screen.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { cfg, createSession, launch, rpc, shot, until } from "./lib.mjs";

let browser;
before(async () => {
  browser = await launch();
});
after(() => browser?.close());

test("dev wallet: the button pays the shown amount to the shown address from the faucet, and the deposit is detected", async () => {
  const session = await createSession("deposit", cfg.operators.embedded.key, { amount: "12.00" });
  const got = await rpc("WidgetService", "GetSession", { sid: session.sid });
  assert.equal(got.body.devWallet, true, JSON.stringify(got.body));

  const page = await browser.newPage({ viewport: { width: 480, height: 800 } });
  await page.goto(session.url);
  await page.getByLabel("Network").selectOption({ label: cfg.chain.name });
  await page.getByRole("radio", { name: "USDT" }).check();
  await page.getByRole("button", { name: "Continue" }).click();
  const address = (await page.locator("#deposit-address").textContent()).trim();
  await page.getByRole("heading", { name: `Send 12 USDT on ${cfg.chain.name}` }).waitFor();

  await page.getByRole("button", { name: "Pay with the dev wallet" }).click();
  await page.getByText("Paid from the dev wallet:").waitFor({ timeout: 30000 });
  await shot(page, "dev-wallet-paid");
  const status = page.locator("#deposit-status");
  await until("the dev wallet's payment detected", async () => {
    const text = (await status.textContent().catch(() => "")) ?? "";
    return /12 USDT seen on the network/.test(text) || (await page.getByRole("heading", { name: "Deposit received" }).isVisible());
  }, 60000, 100);
  await shot(page, "dev-wallet-detected");

  // The deposit the widget follows is the faucet's payment to the address it showed.
  const list = await rpc("WidgetService", "ListSessionDeposits", { sid: session.sid });
  assert.equal(list.body.deposits.length, 1, JSON.stringify(list.body));
  assert.equal(list.body.deposits[0].amount, "12.000000");
  assert.equal(list.body.deposits[0].currency, "USDT");
  const hash = (await page.locator("#dev-wallet-status code").getAttribute("title")) ?? "";
  assert.equal(list.body.deposits[0].transactionHash.toLowerCase(), hash.toLowerCase());
  assert.match(address, /^0x[0-9a-fA-F]{40}$/);
  await page.close();
});
