// The management panel at /panel: its own login (admin email, password, optional TOTP) and
// the admin token kept in sessionStorage (gone with the tab) and sent as Bearer on every call
// — never the operator key. Screens are addressed by the URL hash (#/withdrawals, …).
import "./styles.css";
import { Code } from "@connectrpc/connect";
import { AdminService, AdminWithdrawalAction, type Admin, type WebhookDelivery } from "../../../gen/ts/coffer/v1/admin_pb.js";
import { PauseScope, type ChainTransaction, type PayoutPause } from "../../../gen/ts/coffer/v1/payouts_pb.js";
import { ChainService } from "../../../gen/ts/coffer/v1/chain_pb.js";
import type { Deposit } from "../../../gen/ts/coffer/v1/deposit_pb.js";
import type { Theme, ThemeStyle } from "../../../gen/ts/coffer/v1/theme_pb.js";
import type { Withdrawal } from "../../../gen/ts/coffer/v1/withdrawal_pb.js";
import { ApprovalMode, Decision, DepositStatus, DepositType, HeldReason, ReorgResolution, WebhookEventType, WithdrawalStatus } from "../../../gen/ts/coffer/v1/types_pb.js";
import { client } from "../shared/api.js";
import { h, mount } from "../shared/dom.js";
import { apiError } from "../shared/errors.js";
import { shortHash, tsDate } from "../shared/format.js";

const TOKEN = "coffer.panel.token";
// The API is this page's own origin, at the path the panel is served under (/panel/).
const base = location.origin + location.pathname.replace(/\/panel\/.*$/, "");
const token = () => sessionStorage.getItem(TOKEN);
const admin = client(AdminService, base, token);
const chains = client(ChainService, base);
const root = document.getElementById("app") as HTMLElement;
let me: Admin | undefined;

const enumName = (e: Record<number, string>, v: number, prefix: string) => (e[v] ?? String(v)).replace(prefix, "");
const wStatus = (s: WithdrawalStatus) => enumName(WithdrawalStatus, s, "");
const when = (d: Date | undefined) => (d ? d.toISOString().replace("T", " ").slice(0, 19) + "Z" : "—");

// --- shell ---------------------------------------------------------------------------------

// serviceTeam screens are shown to admins bound to no operator only (the server refuses the others).
const screens: Record<string, { title: string; show: (arg: string) => Promise<void> | void; serviceTeam?: boolean }> = {
  withdrawals: { title: "Withdrawals", show: (id) => (id ? showWithdrawal(id) : showWithdrawals()) },
  deposits: { title: "Deposits", show: () => showDeposits() },
  replay: { title: "Replay deposit", show: () => showReplay() },
  themes: { title: "Themes", show: () => showThemes() },
  "dead-letters": { title: "Dead letters", show: () => showDeadLetters() },
  funds: { title: "Funds", show: () => showFunds() },
  payouts: { title: "Payouts", show: () => showPayouts(), serviceTeam: true },
};

function shell(title: string, ...body: (Node | Node[] | null | false)[]): HTMLElement[] {
  const current = hashPath()[0];
  return [
    h("header", { class: "top" },
      h("strong", { class: "brand" }, "Coffer panel"),
      h("nav", { "aria-label": "Sections" },
        Object.entries(screens).filter(([, s]) => !s.serviceTeam || (me && !me.operatorId))
          .map(([k, s]) => h("a", { href: `#/${k}`, "aria-current": k === current ? "page" : false }, s.title))),
      h("span", { class: "who" }, me ? `${me.email}${me.operatorId ? ` (operator ${me.operatorId.slice(0, 8)})` : " (service team)"}` : ""),
      h("button", { type: "button", class: "secondary", onclick: logout }, "Log out")),
    h("main", { class: "content" }, h("h1", null, title), ...body),
  ];
}

function alertBox(text: string, kind: "error" | "ok" = "error"): HTMLElement {
  return h("p", { class: `msg ${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

/** guard runs a call; Unauthenticated (expired or revoked token) returns to the login. */
async function guard<T>(fn: () => Promise<T>, out?: HTMLElement): Promise<T | undefined> {
  try {
    return await fn();
  } catch (err) {
    const e = apiError(err);
    if (e.code === Code.Unauthenticated) {
      sessionStorage.removeItem(TOKEN);
      showLogin("Your session ended. Please log in again.");
      return undefined;
    }
    const text = `${e.reason || Code[e.code]}: ${e.message}`;
    if (out) out.replaceChildren(alertBox(text));
    else mount(root, ...shell("Error", alertBox(text)));
    return undefined;
  }
}

async function route() {
  if (!token()) return showLogin();
  if (!me) {
    try {
      me = (await admin.getMe({})).admin;
    } catch (err) {
      // An expired token, or a credential of another kind (an operator key is refused here).
      sessionStorage.removeItem(TOKEN);
      const e = apiError(err);
      return showLogin(e.code === Code.PermissionDenied ? "This credential cannot open the panel: log in as an admin." : "Please log in.");
    }
  }
  const [name, arg] = hashPath();
  const screen = screens[name] ?? screens.withdrawals;
  document.title = `${screen.title} · Coffer panel`;
  await screen.show(decodeURIComponent(arg));
}

/** hashPath splits "#/withdrawals/<id>?status=1" into its screen and argument. */
function hashPath(): [string, string] {
  const [, name = "withdrawals", arg = ""] = location.hash.split("?")[0].split("/");
  return [name || "withdrawals", arg];
}

window.addEventListener("hashchange", () => void route());

// --- login ---------------------------------------------------------------------------------

function showLogin(notice?: string) {
  me = undefined;
  document.title = "Log in · Coffer panel";
  const out = h("div", { "aria-live": "polite" }, notice ? alertBox(notice) : null);
  const email = h("input", { id: "email", name: "email", type: "email", autocomplete: "username", required: true });
  const password = h("input", { id: "password", name: "password", type: "password", autocomplete: "current-password", required: true });
  const totp = h("input", { id: "totp", name: "totp", inputmode: "numeric", autocomplete: "one-time-code", pattern: "[0-9]{6}", maxlength: 6 });
  const go = h("button", { type: "submit", class: "primary" }, "Log in");
  const form = h("form", { class: "login" },
    h("h1", null, "Coffer panel"),
    h("label", { for: "email" }, "Email"), email,
    h("label", { for: "password" }, "Password"), password,
    h("label", { for: "totp" }, "Authenticator code (when enrolled)"), totp,
    out, go);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    go.disabled = true;
    try {
      const res = await admin.login({ email: email.value.trim(), password: password.value, totp: totp.value.trim() });
      sessionStorage.setItem(TOKEN, res.token);
      me = res.admin;
      if (!location.hash) location.hash = "#/withdrawals";
      else await route();
    } catch (err) {
      const ae = apiError(err);
      out.replaceChildren(alertBox(ae.code === Code.Unauthenticated ? "Wrong email, password or code." : ae.message || "Login failed."));
      password.value = "";
      password.focus();
    } finally {
      go.disabled = false;
    }
  });
  mount(root, form);
  email.focus();
}

async function logout() {
  await admin.logout({}).catch(() => undefined);
  sessionStorage.removeItem(TOKEN);
  showLogin("Logged out.");
}

// --- withdrawals -----------------------------------------------------------------------------

const pages: string[] = [];

async function showWithdrawals(pageToken = "") {
  const q = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const status = h("select", { id: "f-status", name: "status" }, h("option", { value: "" }, "All"),
    [1, 2, 3, 4, 5, 6, 7].map((s) => h("option", { value: String(s), selected: q.get("status") === String(s) }, wStatus(s))));
  const operator = h("input", { id: "f-operator", name: "operator", value: q.get("operator") ?? "", placeholder: "operator UUID" });
  const user = h("input", { id: "f-user", name: "user", value: q.get("user") ?? "", placeholder: "externalUserId" });
  const filters = h("form", { class: "filters" },
    h("label", { for: "f-status" }, "Status"), status,
    h("label", { for: "f-operator" }, "Operator"), operator,
    h("label", { for: "f-user" }, "User"), user,
    h("button", { type: "submit" }, "Filter"));
  filters.addEventListener("submit", (e) => {
    e.preventDefault();
    const p = new URLSearchParams();
    if (status.value) p.set("status", status.value);
    if (operator.value.trim()) p.set("operator", operator.value.trim());
    if (user.value.trim()) p.set("user", user.value.trim());
    pages.length = 0;
    location.hash = `#/withdrawals?${p}`;
  });
  const out = h("div", null, h("p", null, "Loading…"));
  mount(root, ...shell("Withdrawals", filters, out));
  const res = await guard(() => admin.listWithdrawals({
    statuses: q.get("status") ? [Number(q.get("status"))] : [], operatorId: q.get("operator") ?? "", externalUserId: q.get("user") ?? "", pageSize: 25, pageToken,
  }), out);
  if (!res) return;
  const rows = res.withdrawals.map((w) =>
    h("tr", null,
      h("td", null, when(tsDate(w.requestedAt))),
      h("td", null, h("a", { href: `#/withdrawals/${w.withdrawRequestId}` }, w.withdrawRequestId.slice(0, 8))),
      h("td", null, w.externalUserId),
      h("td", { class: "num" }, `${w.fiatAmount} ${w.fiatCurrencyCode}`),
      h("td", { class: "num" }, `${w.cryptoAmountSent} ${w.cryptoCurrencyCode}`),
      h("td", null, String(w.chainId)),
      h("td", null, h("span", { class: `badge s-${wStatus(w.status)}` }, wStatus(w.status))),
      h("td", null, enumName(ApprovalMode, w.approvalMode, ""))));
  out.replaceChildren(
    table(["Requested", "ID", "User", "Fiat", "Crypto", "Chain", "Status", "Mode"], rows, "No withdrawals match."),
    pager(pageToken, res.nextPageToken, (t) => void showWithdrawals(t)));
}

function table(head: string[], rows: HTMLElement[], empty: string): HTMLElement {
  if (rows.length === 0) return h("p", { class: "empty" }, empty);
  return h("div", { class: "scroll" }, h("table", null, h("thead", null, h("tr", null, head.map((c) => h("th", { scope: "col" }, c)))), h("tbody", null, rows)));
}

/** pager moves through cursor pages; the tokens of earlier pages are kept for "Previous". */
function pager(current: string, next: string, go: (token: string) => void): HTMLElement {
  return h("div", { class: "pager" },
    h("button", { type: "button", disabled: pages.length === 0, onclick: () => go(pages.pop() ?? "") }, "Previous"),
    h("button", { type: "button", disabled: !next, onclick: () => { pages.push(current); go(next); } }, "Next"));
}

function field(label: string, value: Node | string): HTMLElement[] {
  return [h("dt", null, label), h("dd", null, value || "—")];
}

async function showWithdrawal(id: string) {
  const out = h("div", null, h("p", null, "Loading…"));
  mount(root, ...shell(`Withdrawal ${id.slice(0, 8)}`, h("a", { href: "#/withdrawals" }, "← All withdrawals"), out));
  const res = await guard(() => admin.getAdminWithdrawal({ withdrawRequestId: id }), out);
  if (!res?.withdrawal) return;
  const w = res.withdrawal;
  out.replaceChildren(
    h("dl", { class: "details" },
      field("Withdrawal ID", h("code", null, w.withdrawRequestId)),
      field("Status", h("span", { id: "w-status", class: `badge s-${wStatus(w.status)}` }, wStatus(w.status))),
      field("Approval mode", enumName(ApprovalMode, w.approvalMode, "")),
      field("Operator", w.operatorId), field("Session", w.sessionRef), field("User", w.externalUserId),
      field("Type", w.type === 2 ? "OFF_RAMP" : "DIRECT_TRANSFER"),
      field("Fiat amount", `${w.fiatAmount} ${w.fiatCurrencyCode}`),
      field("Crypto amount", `${w.cryptoAmountSent} ${w.cryptoCurrencyCode} on chain ${w.chainId}`),
      field("USD value", w.amountInUsd), field("Destination", h("code", null, w.address)),
      field("Settlement tx", w.settlementTxHash ? h("code", null, w.settlementTxHash) : ""),
      field("Held reason", w.heldReason ? enumName(HeldReason, w.heldReason, "") : ""),
      field("Admin note", w.adminNote),
      field("Requested", when(tsDate(w.requestedAt))), field("Updated", when(tsDate(w.updatedAt))),
      field("Completed", when(tsDate(w.completedAt))), field("Expires", when(tsDate(w.expiresAt)))),
    actions(w, res.allowedActions) ?? "",
    h("h2", null, "History"),
    table(["When", "From", "To", "By", "Note"], res.history.map((a) =>
      h("tr", null, h("td", null, when(tsDate(a.createdAt))), h("td", null, wStatus(a.fromStatus)), h("td", null, wStatus(a.toStatus)),
        h("td", { title: a.actor }, a.actorDisplay || a.actor), h("td", null, a.note))), "No status changes yet."));
}

type Move = { label: string; run: (note: string) => Promise<string>; danger?: boolean; warn: string };

/** actions offers the moves the server allows now (allowed, from the withdrawal's transition
 *  table: none once it is final or while its payout is on its way): the synchronous mode's two
 *  steps (PENDING -> PROCESSING -> COMPLETED or REJECTED) or the external mode's approve/reject
 *  override. Each asks for a note and a confirmation before it is sent. */
function actions(w: Withdrawal, allowed: AdminWithdrawalAction[]): HTMLElement | null {
  const update = (status: WithdrawalStatus) => async (note: string) => {
    const r = await admin.updateWithdrawalStatus({ withdrawRequestId: w.withdrawRequestId, status, adminNote: note });
    return `Moved to ${wStatus(r.withdrawal?.status ?? status)}.`;
  };
  const decide = (decision: Decision) => async (note: string) => {
    const r = await admin.overrideDecision({ withdrawRequestId: w.withdrawRequestId, decision, adminNote: note });
    return r.held ? `Held: ${enumName(HeldReason, r.heldReason, "")}. The withdrawal stays AWAITING_APPROVAL.`
      : `Now ${wStatus(r.withdrawStatus)}${r.settlementTxHash ? ` (settlement ${r.settlementTxHash})` : ""}.`;
  };
  const moveOf: Partial<Record<AdminWithdrawalAction, Move>> = {
    [AdminWithdrawalAction.PROCESS]: { label: "Move to PROCESSING", run: update(WithdrawalStatus.PROCESSING), warn: "Step 1 of 2: the withdrawal is taken in hand." },
    [AdminWithdrawalAction.COMPLETE]: { label: "Complete (pay out)", run: update(WithdrawalStatus.COMPLETED), warn: `Step 2 of 2: ${w.cryptoAmountSent} ${w.cryptoCurrencyCode} will be paid on-chain to ${w.address}.` },
    [AdminWithdrawalAction.REJECT]: { label: "Reject", run: update(WithdrawalStatus.REJECTED), danger: true, warn: "Step 2 of 2: nothing will be paid." },
    [AdminWithdrawalAction.OVERRIDE_APPROVE]: { label: "Approve (override)", run: decide(Decision.APPROVE), warn: `Overrides the operator: ${w.cryptoAmountSent} ${w.cryptoCurrencyCode} will be paid on-chain to ${w.address} (subject to the caps).` },
    [AdminWithdrawalAction.OVERRIDE_REJECT]: { label: "Reject (override)", run: decide(Decision.REJECT), danger: true, warn: "Overrides the operator: nothing will be paid and no webhook is sent." },
  };
  // An action this build does not know (a newer server) is not offered.
  const moves = allowed.flatMap((a) => moveOf[a] ?? []);
  if (moves.length === 0) return null;
  const note = h("textarea", { id: "admin-note", name: "note", rows: 2, maxlength: 2000 });
  const out = h("div", { "aria-live": "polite" });
  const buttons = h("div", { class: "row" });
  const reset = () => buttons.replaceChildren(...moves.map((m) => h("button", { type: "button", class: m.danger ? "danger" : "primary", onclick: () => confirmStep(m) }, m.label)));
  const confirmStep = (m: (typeof moves)[number]) => {
    out.replaceChildren(h("p", { class: "msg warn" }, m.warn));
    buttons.replaceChildren(
      h("button", { type: "button", class: m.danger ? "danger" : "primary", onclick: async (e: Event) => {
        (e.currentTarget as HTMLButtonElement).disabled = true;
        const msg = await guard(() => m.run(note.value.trim()), out);
        if (msg === undefined) return reset();
        out.replaceChildren(alertBox(msg, "ok"));
        setTimeout(() => void showWithdrawal(w.withdrawRequestId), 600);
      } }, `Confirm: ${m.label}`),
      h("button", { type: "button", onclick: () => { out.replaceChildren(); reset(); } }, "Cancel"));
    (buttons.firstElementChild as HTMLElement).focus();
  };
  reset();
  return h("section", { class: "actions", "aria-label": "Status change" }, h("h2", null, "Change status"), h("label", { for: "admin-note" }, "Note (kept in the history)"), note, buttons, out);
}

// --- deposits --------------------------------------------------------------------------------

async function showDeposits(pageToken = "") {
  const q = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const status = h("select", { id: "f-dstatus" }, h("option", { value: "" }, "All"),
    [1, 2, 6, 3, 7, 4, 5].map((s) => h("option", { value: String(s), selected: q.get("status") === String(s) }, enumName(DepositStatus, s, ""))));
  const operator = h("input", { id: "f-doperator", value: q.get("operator") ?? "", placeholder: "operator UUID" });
  const user = h("input", { id: "f-duser", value: q.get("user") ?? "", placeholder: "externalUserId" });
  const filters = h("form", { class: "filters" },
    h("label", { for: "f-dstatus" }, "Status"), status, h("label", { for: "f-doperator" }, "Operator"), operator,
    h("label", { for: "f-duser" }, "User"), user, h("button", { type: "submit" }, "Filter"));
  filters.addEventListener("submit", (e) => {
    e.preventDefault();
    const p = new URLSearchParams();
    if (status.value) p.set("status", status.value);
    if (operator.value.trim()) p.set("operator", operator.value.trim());
    if (user.value.trim()) p.set("user", user.value.trim());
    pages.length = 0;
    location.hash = `#/deposits?${p}`;
  });
  const out = h("div", null, h("p", null, "Loading…"));
  const detail = h("div", { id: "deposit-detail", "aria-live": "polite" });
  mount(root, ...shell("Deposits", filters, out, detail));
  const res = await guard(() => admin.listDeposits({
    statuses: q.get("status") ? [Number(q.get("status"))] : [], operatorId: q.get("operator") ?? "", externalUserId: q.get("user") ?? "", pageSize: 25, pageToken,
  }), out);
  if (!res) return;
  const rows = res.deposits.map((d) =>
    h("tr", null,
      h("td", null, when(tsDate(d.detectedAt))),
      h("td", null, h("button", { type: "button", class: "link", onclick: () => detail.replaceChildren(depositDetail(d)) }, String(d.depositId))),
      h("td", null, d.externalUserId),
      h("td", { class: "num" }, `${d.grossAmount} ${d.currency}`),
      h("td", null, String(d.chainId)),
      h("td", null, h("span", { class: "badge" }, enumName(DepositStatus, d.status, ""))),
      h("td", null, [d.manual ? "replay" : "", d.treasury ? "treasury" : ""].filter(Boolean).join(", "))));
  out.replaceChildren(table(["Detected", "ID", "User", "Gross (raw)", "Chain", "Status", ""], rows, "No deposits match."),
    pager(pageToken, res.nextPageToken, (t) => void showDeposits(t)));
}

function depositDetail(d: Deposit): HTMLElement {
  return h("section", { class: "card" }, h("h2", null, `Deposit ${d.depositId}`),
    h("dl", { class: "details" },
      field("Status", enumName(DepositStatus, d.status, "")), field("Type", enumName(DepositType, d.type, "")),
      field("Operator", d.operatorId), field("User", d.externalUserId), field("Session", d.sessionRef),
      field("Chain", String(d.chainId)), field("Currency", d.currency), field("Contract", d.contractAddress),
      field("Transaction", h("code", null, d.transactionHash)), field("Log index", String(d.logIndex)),
      field("Address", h("code", null, d.address)), field("Block", String(d.blockNumber)),
      field("Gross / fee / net (raw)", `${d.grossAmount} / ${d.feeAmount} / ${d.amount}`),
      field("Net USD", d.amountInDollar), field("Sweep tx", d.sweepTxHash ? h("code", null, d.sweepTxHash) : ""),
      field("Manual replay", d.manual ? (d.replayedBy ? `yes, by ${d.replayedBy}` : "yes") : "no"), field("Treasury payment", d.treasury ? "yes (funds the operator; no DEPOSIT)" : "no"),
      field("Detected", when(tsDate(d.detectedAt))), field("Credited", when(tsDate(d.confirmedAt))),
      d.status === DepositStatus.REORGED ? field("Reorg", h("a", { href: "#/funds" },
        "its block left the chain after confirmation: it does not count toward the operator's funds (Funds → Reorged deposits)")) : []));
}

// --- funds -----------------------------------------------------------------------------------

/** showFunds lists each operator's funds: what payouts can draw on (available) and what queued
 * payouts hold (reserved). Only the service team adjusts them (CLI or OpsService). Below them,
 * the deposits whose block left the chain after their confirmation depth (a deep reorg): they
 * do not count until they are mined again or the service team resolves them. */
async function showFunds() {
  const out = h("div", null, h("p", null, "Loading…"));
  const all = new URLSearchParams(location.hash.split("?")[1] ?? "").get("reorgs") === "all";
  const reorgs = h("div", { id: "reorgs" }, h("p", null, "Loading…"));
  mount(root, ...shell("Funds", h("p", { class: "hint" },
    "Each operator pays out only from its own funds: credited by its users' deposits and its treasury payments, reserved while a payout is on its way."), out,
    h("h2", null, "Reorged deposits"),
    h("p", { class: "hint" },
      "Deposits whose block left the chain after their confirmation depth. Their credit is taken back from the operator's available funds " +
      "(a negative available is a shortfall: payouts are refused until it is covered) until the transfer is mined again or the service team " +
      "resolves them (coffer deposit resolve, OpsService.ResolveReorgedDeposit). No webhook is sent. ",
      h("a", { href: all ? "#/funds" : "#/funds?reorgs=all" }, all ? "Unresolved only" : "Show resolved too")),
    reorgs));
  const res = await guard(() => admin.listOperatorFunds({}), out);
  if (!res) return;
  const names = new Map(res.operators.map((op) => [op.operatorId, op.operatorName]));
  const rows = res.operators.flatMap((op) => op.balances.map((b, i) =>
    h("tr", null,
      h("td", null, i === 0 ? op.operatorName : ""),
      h("td", null, String(b.chainId)),
      h("td", null, b.currency),
      h("td", { class: b.available.startsWith("-") ? "num short" : "num", title: b.available.startsWith("-") ? "shortfall after a reorg" : false }, b.available),
      h("td", { class: "num" }, b.reserved))));
  out.replaceChildren(table(["Operator", "Chain", "Currency", "Available", "Reserved"], rows, "No operators."));
  const list = await guard(() => admin.listDepositReorgs({ includeResolved: all, pageSize: 100 }), reorgs);
  if (!list) return;
  const reorgRows = list.items.map((r) => {
    const d = r.deposit;
    const resolution = r.resolution ? `${enumName(ReorgResolution, r.resolution, "")} by ${r.resolvedBy}: ${r.note}` : "unresolved";
    return h("tr", null,
      h("td", null, when(tsDate(r.detectedAt))),
      h("td", null, String(d?.depositId ?? "")),
      h("td", null, names.get(d?.operatorId ?? "") ?? d?.operatorId ?? ""),
      h("td", null, String(d?.chainId ?? "")),
      h("td", { class: "num" }, `${d?.grossAmount ?? ""} ${d?.currency ?? ""}`),
      h("td", { class: "num" }, r.reversedAmount),
      h("td", null, h("code", { title: r.blockHash }, `${r.blockNumber}`), " ", h("code", { title: d?.transactionHash ?? "" }, shortHash(d?.transactionHash ?? ""))),
      h("td", null, enumName(DepositStatus, r.priorStatus, "")),
      h("td", null, r.reincludedBlock ? String(r.reincludedBlock) : "—"),
      h("td", null, h("span", { class: r.resolution ? "badge" : "badge warn" }, resolution)));
  });
  reorgs.replaceChildren(table(["Detected", "Deposit", "Operator", "Chain", "Gross (raw)", "Reversed (raw)", "Block / tx", "Was", "Mined again", "Resolution"],
    reorgRows, all ? "No reorged deposits." : "No unresolved reorged deposits."));
}

// --- replay ----------------------------------------------------------------------------------

async function showReplay() {
  const chain = h("select", { id: "r-chain", name: "chain" });
  const hash = h("input", { id: "r-hash", name: "hash", required: true, pattern: "0x[0-9a-fA-F]{64}", placeholder: "0x… (64 hex)", spellcheck: "false" });
  const out = h("div", { id: "replay-result", "aria-live": "polite" });
  // Enabled once the networks are listed: a replay is always for a chosen network.
  const go = h("button", { type: "submit", class: "primary", disabled: true }, "Replay");
  const form = h("form", { class: "stack narrow" },
    h("p", null, "Checks a transaction the scanner missed on-chain and credits it as a manual deposit (the normal DEPOSIT webhook follows). A known deposit is returned unchanged."),
    h("label", { for: "r-chain" }, "Network"), chain, h("label", { for: "r-hash" }, "Transaction hash"), hash, go, out);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    go.disabled = true;
    out.replaceChildren(h("p", null, "Checking on-chain…"));
    const res = await guard(() => admin.replayDeposit({ chainId: BigInt(chain.value), txHash: hash.value.trim() }), out);
    go.disabled = false;
    if (!res) return;
    out.replaceChildren(
      alertBox(res.alreadyKnown ? `Already known: ${res.deposits.length} deposit(s), nothing changed.` : `Replayed: ${res.deposits.length} deposit(s) created.`, "ok"),
      ...res.deposits.map(depositDetail));
  });
  mount(root, ...shell("Replay missed deposit", form));
  const list = await guard(() => chains.listChains({}), out);
  chain.replaceChildren(...(list?.chains ?? []).map((c) => h("option", { value: String(c.chainId) }, `${c.name} (${c.chainId})`)));
  go.disabled = chain.options.length === 0;
}

// --- themes ----------------------------------------------------------------------------------

const defaultStyle = { primaryColor: "#3b5bdb", backgroundColor: "#ffffff", textColor: "#1b1f24", logoUrl: "", borderRadius: 10, fontFamily: "" };

async function showThemes() {
  const out = h("div", null, h("p", null, "Loading…"));
  const editor = h("div", { id: "theme-editor" });
  mount(root, ...shell("Themes", h("button", { type: "button", class: "primary inline", onclick: () => editor.replaceChildren(themeForm()) }, "New theme"), editor, out));
  const res = await guard(() => admin.listThemes({}), out);
  if (!res) return;
  out.replaceChildren(table(["Slug", "Name", "Operator", "Colours", "Updated", ""], res.themes.map((t) =>
    h("tr", null,
      h("td", null, h("code", null, t.slug)), h("td", null, t.name), h("td", null, t.operatorId.slice(0, 8)),
      h("td", null, ["primaryColor", "backgroundColor", "textColor"].map((k) => swatch((t.style as unknown as Record<string, string>)?.[k] ?? ""))),
      h("td", null, when(tsDate(t.updatedAt))),
      h("td", null,
        h("button", { type: "button", onclick: () => { editor.replaceChildren(themeForm(t)); editor.scrollIntoView(); } }, "Edit"), " ",
        h("button", { type: "button", class: "danger", onclick: async () => {
          if (!confirm(`Delete theme ${t.slug}? Sessions using it fall back to the built-in look.`)) return;
          if (await guard(() => admin.deleteTheme({ id: t.id }), out)) void showThemes();
        } }, "Delete")))), "No themes yet."));
}

function swatch(color: string): HTMLElement {
  const s = h("span", { class: "swatch", title: color, "aria-label": color });
  s.style.background = color;
  return s;
}

/** themeForm creates (no theme) or edits a theme, with a live preview of the widget's look. */
function themeForm(t?: Theme): HTMLElement {
  const st: Omit<ThemeStyle, "$typeName" | "$unknown"> = { ...defaultStyle, ...(t?.style ?? {}) };
  const input = (id: string, label: string, attrs: Record<string, string | number | boolean>) =>
    [h("label", { for: id }, label), h("input", { id, name: id, ...attrs })];
  const [lOp, operator] = input("t-operator", "Operator ID (empty: your own operator)", { value: t?.operatorId ?? me?.operatorId ?? "", disabled: !!t, placeholder: "operator UUID" });
  const [lSlug, slug] = input("t-slug", "Slug (permanent; used as ?theme=)", { value: t?.slug ?? "", required: true, pattern: "[a-z0-9]+(-[a-z0-9]+)*", maxlength: 64, disabled: !!t });
  const [lName, name] = input("t-name", "Name", { value: t?.name ?? "", required: true, maxlength: 100 });
  const [lP, primary] = input("t-primary", "Primary colour", { type: "color", value: st.primaryColor || defaultStyle.primaryColor });
  const [lB, bg] = input("t-background", "Background colour", { type: "color", value: st.backgroundColor || defaultStyle.backgroundColor });
  const [lT, text] = input("t-text", "Text colour", { type: "color", value: st.textColor || defaultStyle.textColor });
  const [lL, logo] = input("t-logo", "Logo URL (https)", { type: "url", value: st.logoUrl, placeholder: "https://…" });
  const [lR, radius] = input("t-radius", "Corner radius (px)", { type: "number", min: 0, max: 32, value: st.borderRadius });
  const [lF, font] = input("t-font", "Font family", { value: st.fontFamily, placeholder: "Inter, sans-serif", maxlength: 200 });
  const v = (el: Node) => (el as HTMLInputElement).value;
  const preview = h("div", { class: "preview", "aria-label": "Preview of the widget", role: "img" });
  const renderPreview = () => {
    preview.style.setProperty("--p-primary", v(primary));
    preview.style.setProperty("--p-bg", v(bg));
    preview.style.setProperty("--p-text", v(text));
    preview.style.setProperty("--p-radius", `${Number(v(radius)) || 0}px`);
    preview.style.fontFamily = v(font) || "";
    preview.replaceChildren(
      h("div", { class: "p-bar" }, /^https:/.test(v(logo)) ? h("img", { src: v(logo), alt: "" }) : h("strong", null, "Operator")),
      h("div", { class: "p-body" }, h("strong", null, "Deposit"), h("div", { class: "p-box" }, "Amount to deposit: $25.00"), h("div", { class: "p-button" }, "Continue")));
  };
  const out = h("div", { "aria-live": "polite" });
  const form = h("form", { class: "theme-form" },
    h("h2", null, t ? `Edit theme ${t.slug}` : "New theme"),
    h("div", { class: "grid" }, lOp, operator, lSlug, slug, lName, name, lP, primary, lB, bg, lT, text, lL, logo, lR, radius, lF, font),
    h("h3", null, "Preview"), preview,
    h("button", { type: "submit", class: "primary" }, t ? "Save theme" : "Create theme"), out);
  form.addEventListener("input", renderPreview);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const style = { primaryColor: v(primary), backgroundColor: v(bg), textColor: v(text), logoUrl: v(logo).trim(), borderRadius: Number(v(radius)) || 0, fontFamily: v(font).trim() };
    const res = await guard<unknown>(() => t
      ? admin.updateTheme({ id: t.id, name: v(name).trim(), style })
      : admin.createTheme({ operatorId: v(operator).trim(), slug: v(slug).trim(), name: v(name).trim(), style }), out);
    if (!res) return;
    out.replaceChildren(alertBox(t ? "Theme saved." : `Theme ${v(slug).trim()} created: add &theme=${v(slug).trim()} to a widget URL.`, "ok"));
    setTimeout(() => void showThemes(), 800);
  });
  renderPreview();
  return form;
}

// --- dead letters ----------------------------------------------------------------------------

async function showDeadLetters(pageToken = "") {
  const out = h("div", null, h("p", null, "Loading…"));
  mount(root, ...shell("Dead-lettered webhooks", h("p", null, "Webhooks whose five attempts failed. Redeliver queues one again with the same event id and payload."), out));
  const res = await guard(() => admin.listDeadLetters({ pageSize: 25, pageToken }), out);
  if (!res) return;
  const row = (d: WebhookDelivery): HTMLElement => {
    const state = h("td", null, d.state);
    return h("tr", null,
      h("td", null, when(tsDate(d.createdAt))), h("td", null, h("code", { title: d.eventId }, shortHash(d.eventId))),
      h("td", null, enumName(WebhookEventType, d.eventType, "")), h("td", null, d.operatorId.slice(0, 8)),
      h("td", { class: "num" }, String(d.attempts)), h("td", { class: "wrap" }, d.lastError), state,
      h("td", null, h("button", { type: "button", onclick: async (e: Event) => {
        const b = e.currentTarget as HTMLButtonElement;
        b.disabled = true;
        const r = await guard(() => admin.redeliverWebhook({ eventId: d.eventId }), out);
        state.textContent = r?.delivery?.state ?? d.state;
        b.textContent = r ? "Queued" : "Redeliver";
      } }, "Redeliver")));
  };
  out.replaceChildren(table(["Created", "Event", "Type", "Operator", "Attempts", "Last error", "State", ""], res.deliveries.map(row), "No dead-lettered webhooks."),
    pager(pageToken, res.nextPageToken, (t) => void showDeadLetters(t)));
}

// --- payouts (service team) ------------------------------------------------------------------

const scopeName = (s: PauseScope) => enumName(PauseScope, s, "PAUSE_SCOPE_").toLowerCase();

function pauseLabel(p: PayoutPause): string {
  if (p.scope === PauseScope.CHAIN) return `chain ${p.chainId}`;
  if (p.scope === PauseScope.OPERATOR) return `operator ${p.operatorId}`;
  return "all payouts";
}

/** showPayouts: the service team's payout controls. Pauses hold APPROVE (TEMPORARILY_UNAVAILABLE),
 * refuse admin COMPLETED and keep queued payouts from being sent; stuck or reverted payout
 * transactions are re-sent at a higher fee, cancelled, or marked failed (each with a reason). */
async function showPayouts() {
  const pausesOut = h("div", { "aria-live": "polite" }, h("p", null, "Loading…"));
  const txOut = h("div", { "aria-live": "polite" }, h("p", null, "Loading…"));
  const formOut = h("div", { "aria-live": "polite" });
  const scope = h("select", { id: "pause-scope", name: "scope" },
    h("option", { value: String(PauseScope.GLOBAL) }, "All payouts"),
    h("option", { value: String(PauseScope.CHAIN) }, "One chain"),
    h("option", { value: String(PauseScope.OPERATOR) }, "One operator"));
  const chainId = h("input", { id: "pause-chain", name: "chainId", inputmode: "numeric" });
  const operatorId = h("input", { id: "pause-operator", name: "operatorId" });
  const reason = h("input", { id: "pause-reason", name: "reason", required: true });
  const form = h("form", { class: "inline" },
    h("label", { for: "pause-scope" }, "Scope"), scope,
    h("label", { for: "pause-chain" }, "Chain id (one chain)"), chainId,
    h("label", { for: "pause-operator" }, "Operator id (one operator)"), operatorId,
    h("label", { for: "pause-reason" }, "Reason"), reason,
    h("button", { type: "submit", class: "primary" }, "Pause payouts"), formOut);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const sc = Number(scope.value) as PauseScope;
    const r = await guard(() => admin.pausePayouts({ target: {
      scope: sc, reason: reason.value.trim(),
      chainId: sc === PauseScope.CHAIN ? BigInt(chainId.value.trim() || "0") : 0n,
      operatorId: sc === PauseScope.OPERATOR ? operatorId.value.trim() : "",
    } }), formOut);
    if (r) {
      reason.value = "";
      formOut.replaceChildren(alertBox(`Paused: ${pauseLabel(r.pause!)}.`, "ok"));
      await loadPauses();
    }
  });
  mount(root, ...shell("Payouts",
    h("h2", null, "Pauses"),
    h("p", null, "While paused, an APPROVE is held TEMPORARILY_UNAVAILABLE, an admin COMPLETED is refused with the reason, and queued payouts wait; nothing is lost. Resume lets them go out."),
    pausesOut, form,
    h("h2", null, "Stuck and reverted transactions"),
    h("p", null, "Re-send replaces a pending transaction at a higher fee (same nonce). Cancel replaces a pending payout with a 0-value self-send; if that is mined the withdrawal can be decided again. Mark failed releases the operator's reservation of a payout that can never be mined (reverted, or its nonce used by another transaction)."),
    txOut));

  async function loadPauses() {
    const res = await guard(() => admin.listPayoutPauses({}), pausesOut);
    if (!res) return;
    const row = (p: PayoutPause): HTMLElement => {
      const why = h("input", { "aria-label": `Reason to resume ${pauseLabel(p)}`, placeholder: "reason" });
      return h("tr", null,
        h("td", null, scopeName(p.scope)), h("td", null, pauseLabel(p)), h("td", null, p.pausedBy), h("td", null, when(tsDate(p.pausedAt))),
        h("td", { class: "wrap" }, p.reason),
        h("td", null, why, h("button", { type: "button", onclick: async () => {
          const r = await guard(() => admin.resumePayouts({ target: { scope: p.scope, chainId: p.chainId, operatorId: p.operatorId,
            reason: why.value.trim() } }), pausesOut);
          if (r) await loadPauses();
        } }, "Resume")));
    };
    pausesOut.replaceChildren(table(["Scope", "Covers", "Paused by", "Since", "Reason", ""], res.pauses.map(row), "Payouts are not paused."));
  }

  async function loadTxs() {
    const res = await guard(() => admin.listChainTransactions({ stuck: true }), txOut);
    if (!res) return;
    const row = (t: ChainTransaction): HTMLElement => {
      const why = h("input", { "aria-label": `Reason for transaction ${t.id}`, placeholder: "reason" });
      const msg = h("span", { role: "status" });
      const act = (label: string, call: () => Promise<unknown>) => h("button", { type: "button", onclick: async () => {
        const r = await guard(call, msg);
        if (r) await loadTxs();
      } }, label);
      const target = () => ({ id: t.id, reason: why.value.trim() });
      const payout = t.purpose === "payout";
      return h("tr", null,
        h("td", { class: "num" }, String(t.id)), h("td", null, String(t.chainId)), h("td", null, t.purpose),
        h("td", null, t.withdrawalId ? h("a", { href: `#/withdrawals/${t.withdrawalId}` }, t.withdrawalId.slice(0, 8)) : "—"),
        h("td", { class: "num" }, String(t.nonce)), h("td", null, t.state + (t.requestedAction ? ` (${t.requestedAction} requested)` : "")),
        h("td", null, h("code", { title: t.attempts.at(-1)?.hash ?? "" }, shortHash(t.attempts.at(-1)?.hash ?? ""))),
        h("td", null, when(tsDate(t.createdAt))),
        h("td", null, why,
          t.state === "pending" ? act("Re-send", () => admin.resendChainTransaction({ target: target() })) : null,
          t.state === "pending" && payout ? act("Cancel", () => admin.cancelChainTransaction({ target: target() })) : null,
          payout ? act("Mark failed", () => admin.failChainTransaction({ target: target() })) : null, msg));
    };
    txOut.replaceChildren(table(["Id", "Chain", "Purpose", "Withdrawal", "Nonce", "State", "Latest hash", "Created", ""],
      res.transactions.map(row), "No stuck or reverted transactions."));
  }

  await Promise.all([loadPauses(), loadTxs()]);
}

void route();
