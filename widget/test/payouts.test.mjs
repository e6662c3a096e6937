// The panel's Payouts page (service-team admins): pausing and resuming payouts, audited with
// the admin and the reason.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { adminLogin, cfg, launch, rpc, shot } from "./lib.mjs";

let browser;
before(async () => {
  browser = await launch();
});
after(() => browser?.close());

test("payouts: an operator's payouts are paused and resumed from the panel, each with a reason", async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  await page.goto(`${cfg.panelUrl}/`);
  await page.getByLabel("Email").fill(cfg.admin.email);
  await page.getByLabel("Password").fill(cfg.admin.password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Withdrawals" }).waitFor();
  await page.getByRole("link", { name: "Payouts" }).click();
  await page.getByRole("heading", { name: "Payouts" }).waitFor();
  await page.getByText("Payouts are not paused.").waitFor();

  const op = cfg.operators.refusing.id;
  await page.getByLabel("Scope").selectOption({ label: "One operator" });
  await page.getByLabel("Operator id (one operator)").fill(op);
  await page.getByLabel("Reason", { exact: true }).fill("browser test: incident drill");
  await page.getByRole("button", { name: "Pause payouts" }).click();
  await page.getByText(`Paused: operator ${op}.`).waitFor();
  await page.getByRole("cell", { name: "browser test: incident drill" }).waitFor();
  await shot(page, "panel-payouts-paused");

  const token = await adminLogin();
  let res = await rpc("AdminService", "ListPayoutPauses", {}, token);
  assert.equal(res.status, 200);
  assert.equal(res.body.pauses.length, 1);
  assert.equal(res.body.pauses[0].operatorId, op);
  assert.match(res.body.pauses[0].pausedBy, /^admin:/);

  // Pausing the same scope again is refused with the reason shown.
  await page.getByLabel("Reason", { exact: true }).fill("again");
  await page.getByRole("button", { name: "Pause payouts" }).click();
  await page.getByText("already paused").waitFor();

  await page.getByLabel(`Reason to resume operator ${op}`).fill("drill over");
  await page.getByRole("button", { name: "Resume" }).click();
  await page.getByText("Payouts are not paused.").waitFor();
  res = await rpc("AdminService", "ListPayoutPauses", { includeResumed: true }, token);
  assert.equal(res.body.pauses.length, 1);
  assert.equal(res.body.pauses[0].resumeReason, "drill over");
  await shot(page, "panel-payouts-resumed");
  await page.close();
});
