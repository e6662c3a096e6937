// The management panel in a real browser: its own login, themes applied to the widget,
// deposits with detail, missed-deposit replay, dead letters.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { adminLogin, cfg, createSession, figure, launch, pay, rest, rpc, shot, until } from "./lib.mjs";

let browser;
before(async () => {
  browser = await launch();
  figure("panel bundle gzip", `${(await import("./lib.mjs")).bundleGzip("panel") / 1024 | 0} KB`);
});
after(() => browser?.close());

async function login(page, email = cfg.admin.email, password = cfg.admin.password) {
  await page.goto(`${cfg.panelUrl}/`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Log in" }).click();
}

test("login: a wrong password is refused, the right one opens the panel, logout ends it", async () => {
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  await login(page, cfg.admin.email, "not the password");
  await page.getByText("Wrong email, password or code.").waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  await shot(page, "panel-login-refused");

  await page.getByLabel("Password").fill(cfg.admin.password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Withdrawals" }).waitFor();
  await page.getByText(`${cfg.admin.email} (service team)`).waitFor();
  await shot(page, "panel-withdrawals");
  await page.getByRole("button", { name: "Log out" }).click();
  await page.getByText("Logged out.").waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  await page.close();
});

test("the operator key does not open the panel", async () => {
  const key = cfg.operators.embedded.key;
  // Not as a login password…
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  await login(page, cfg.admin.email, key);
  await page.getByText("Wrong email, password or code.").waitFor();
  // …nor as the panel's token…
  await page.evaluate((k) => sessionStorage.setItem("coffer.panel.token", k), key);
  await page.goto(`${cfg.panelUrl}/#/deposits`);
  await page.getByText("This credential cannot open the panel").waitFor();
  await page.getByLabel("Password").waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem("coffer.panel.token")), null);
  await shot(page, "panel-operator-key-refused");
  // …nor on the admin API directly.
  const res = await rest("GET", "/admin/withdrawals", { bearer: key });
  assert.equal(res.status, 403);
  await page.close();
});

test("theme: created and edited in the panel, applied to the widget with ?theme=slug", async () => {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  await login(page);
  await page.getByRole("link", { name: "Themes" }).click();
  await page.getByRole("button", { name: "New theme" }).click();
  await page.getByLabel("Operator ID").fill(cfg.operators.embedded.id);
  await page.getByLabel("Slug").fill("sunset-orange");
  await page.getByLabel("Name").fill("Sunset");
  await page.getByLabel("Primary colour").fill("#e8590c");
  await page.getByLabel("Background colour").fill("#fff4e6");
  await page.getByLabel("Corner radius").fill("4");
  await page.getByLabel("Font family").fill("Georgia, serif");
  await shot(page, "panel-theme-new");
  await page.getByRole("button", { name: "Create theme" }).click();
  await page.getByText("Theme sunset-orange created").waitFor();
  await page.getByRole("cell", { name: "sunset-orange" }).waitFor();
  await shot(page, "panel-themes");

  // Edit the name; the slug stays.
  await page.getByRole("row", { name: /sunset-orange/ }).getByRole("button", { name: "Edit" }).click();
  await page.getByLabel("Name").fill("Sunset (edited)");
  await page.getByRole("button", { name: "Save theme" }).click();
  await page.getByRole("cell", { name: "Sunset (edited)" }).waitFor();

  const session = await createSession("deposit", cfg.operators.embedded.key);
  const w = await browser.newPage({ viewport: { width: 420, height: 640 } });
  await w.goto(`${session.url}&theme=sunset-orange`);
  const go = w.getByRole("button", { name: "Continue" });
  await go.waitFor();
  const look = await go.evaluate((el) => {
    const s = getComputedStyle(el);
    return { bg: s.backgroundColor, radius: s.borderTopLeftRadius, page: getComputedStyle(document.body).backgroundColor, font: getComputedStyle(document.body).fontFamily };
  });
  assert.deepEqual(look, { bg: "rgb(232, 89, 12)", radius: "4px", page: "rgb(255, 244, 230)", font: "Georgia, serif" });
  await shot(w, "widget-themed");
  // An unknown slug falls back to the built-in look.
  await w.goto(`${session.url}&theme=no-such-theme`);
  await go.waitFor();
  assert.equal(await go.evaluate((el) => getComputedStyle(el).backgroundColor), "rgb(59, 91, 219)");
  await w.close();
  await page.close();
});

test("deposits: a credited deposit is listed with its detail; replay says it is known; an unknown hash gets the precise reason", async () => {
  // A deposit through the API: the address of a session, paid on the dev chain.
  const session = await createSession("deposit", cfg.operators.embedded.key, { amount: "5.00" });
  const addr = await rest("POST", "/depositor/address", { body: { sid: session.sid, currency: "USDC", chainId: cfg.chain.id } });
  const { txHash } = await pay(addr.body.data.address, "USDC", 5_000_000);
  await until("deposit credited", async () => {
    const r = await rpc("WidgetService", "ListSessionDeposits", { sid: session.sid });
    return r.body.deposits?.some((d) => d.status === "DEPOSIT_STATUS_CREDITED");
  }, 60000, 200);

  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  await login(page);
  await page.getByRole("link", { name: "Deposits" }).click();
  const row = page.getByRole("row", { name: /5000000 USDC/ });
  await row.waitFor();
  await row.getByRole("button").click();
  const detail = page.locator("#deposit-detail");
  await detail.getByText(txHash).waitFor();
  await detail.getByText("CREDITED").first().waitFor();
  await shot(page, "panel-deposit-detail");

  await page.getByRole("link", { name: "Replay deposit" }).click();
  await page.getByLabel("Transaction hash").fill(txHash);
  await page.getByRole("button", { name: "Replay" }).click();
  await page.getByText("Already known: 1 deposit(s), nothing changed.").waitFor();
  await shot(page, "panel-replay-known");

  await page.getByLabel("Transaction hash").fill(`0x${"ab".repeat(32)}`);
  await page.getByRole("button", { name: "Replay" }).click();
  const err = page.locator("#replay-result .msg.error");
  await err.waitFor();
  const text = await err.textContent();
  assert.match(text, /^NOT_FOUND: |^INVALID_ARGUMENT: |^FAILED_PRECONDITION: /, text);
  console.log(`replay of an unknown hash: ${text}`);
  await shot(page, "panel-replay-unknown");

  await page.getByRole("link", { name: "Dead letters" }).click();
  await page.getByRole("heading", { name: "Dead-lettered webhooks" }).waitFor();
  await page.getByText("No dead-lettered webhooks.").waitFor();
  await page.close();
});

test("funds: each operator's available and reserved funds, per chain and asset", async () => {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  await login(page);
  await page.getByRole("link", { name: "Funds" }).click();
  await page.getByRole("heading", { name: "Funds" }).waitFor();
  // The embedded operator's float (1,000 USDT, less what earlier tests paid out) is listed.
  const usdt = page.getByRole("row", { name: /USDT/ }).first();
  await usdt.waitFor();
  const cells = await usdt.getByRole("cell").allTextContents();
  assert.equal(cells[1], String(cfg.chain.id));
  assert.match(cells[3], /^\d+\.\d{6}$/);
  assert.match(cells[4], /^\d+\.\d{6}$/);
  const res = await rest("GET", "/balances", { bearer: cfg.operators.embedded.key });
  assert.equal(res.status, 200);
  const own = res.body.data.items.find((b) => b.currency === "USDT");
  await page.getByRole("cell", { name: own.available }).first().waitFor();
  await shot(page, "panel-funds");
  await page.close();
});
