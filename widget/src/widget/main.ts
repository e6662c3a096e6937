// The hosted widget: {widget_url}/?sid=<uuid>[&theme=<slug>][&lang=<code>].
// Deposit: session summary -> network and token -> address, QR code, live status -> result.
// Withdraw: network and token with a quote, destination address -> queued or refused.
// Closing posts {type: "EVENT", payload: {event: "close", data: {reason}}} to the parent
// page; a full-page flow goes to the operator's redirect URL with status=success|cancelled.
import "./styles.css";
import { Code } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { WidgetService, type DepositProgress, type GetDepositAddressResponse, type GetSessionResponse, type QuoteWithdrawalResponse } from "../../../gen/ts/coffer/v1/widget_pb.js";
import { ChainService, type Chain } from "../../../gen/ts/coffer/v1/chain_pb.js";
import type { Theme } from "../../../gen/ts/coffer/v1/theme_pb.js";
import { DepositStatus, SessionKind, SessionStatus, WithdrawalStatus } from "../../../gen/ts/coffer/v1/types_pb.js";
import { apiBase, client } from "../shared/api.js";
import { h, mount, svg } from "../shared/dom.js";
import { apiError, type ApiError } from "../shared/errors.js";
import { clock, fiat, shortHash, trimUnits } from "../shared/format.js";
import { checkAddress, toChecksum } from "../shared/eip55.js";
import { depositView } from "../shared/progress.js";
import { encode, svgPath } from "../shared/qr.js";
import { returnURL } from "../shared/redirect.js";
import { pickLang, translator, type Key, type T } from "./i18n.js";

type Reason = "deposit_success" | "withdraw_queued" | "deposit_failed" | "user_dismissed";

const params = new URLSearchParams(location.search);
const sid = params.get("sid") ?? "";
const themeSlug = params.get("theme") ?? "";
// Same origin as the page unless the server said otherwise; the page lives at <base>/widget/.
const base = apiBase(location.origin);
const widget = client(WidgetService, base);
const chains = client(ChainService, base);

const root = document.getElementById("app") as HTMLElement;
let t: T = translator(pickLang(params.get("lang"), navigator.language));
let session: GetSessionResponse | undefined;
let outcome: Reason = "user_dismissed";
let stopWatching: (() => void) | undefined;
let withdrawalSubmitted = false;

// --- frame ------------------------------------------------------------------------------

function frame(title: string, ...body: (Node | Node[] | null | false)[]): HTMLElement[] {
  const logo = session?.theme?.style?.logoUrl;
  return [
    h("header", { class: "bar" },
      logo && /^https?:/i.test(logo) ? h("img", { class: "logo", src: logo, alt: session?.operatorName ?? "" }) : h("span", { class: "brand" }, session?.operatorName ?? ""),
      h("button", { type: "button", class: "icon", "aria-label": t("dismiss"), onclick: () => close(outcome) }, "×"),
    ),
    h("main", { class: "body" }, h("h1", null, title), ...body),
  ];
}

function summary(): HTMLElement | null {
  if (!session) return null;
  const deposit = session.kind === SessionKind.DEPOSIT;
  return h("dl", { class: "summary" },
    h("div", null, h("dt", null, t(deposit ? "amountDeposit" : "amountWithdraw")), h("dd", { class: "amount" }, fiat(session.amount, session.fiatCurrency, lang()))),
    h("div", null, h("dt", null, t("expiresIn")), h("dd", null, countdown())),
  );
}

function lang(): string {
  return document.documentElement.lang || "en";
}

// countdown is a <time role="timer"> that ticks every second (timers are not announced).
let expiresAt = 0;
function countdown(): HTMLElement {
  const el = h("time", { role: "timer", class: "countdown" });
  const tick = () => {
    const left = expiresAt - Date.now();
    el.textContent = clock(left);
    el.setAttribute("datetime", new Date(expiresAt).toISOString());
    return left;
  };
  tick();
  const timer = setInterval(() => {
    if (!el.isConnected) return clearInterval(timer);
    if (tick() <= 0) {
      clearInterval(timer);
      onExpired();
    }
  }, 1000);
  return el;
}

// A session that runs out while nothing was paid or submitted ends on the expired screen; a
// payment already seen keeps being followed (it is credited even after the session ends).
let paymentSeen = false;
function onExpired() {
  if (!paymentSeen && !withdrawalSubmitted && outcome === "user_dismissed") showExpired();
}

// --- close and redirect -------------------------------------------------------------------

function close(reason: Reason) {
  stopWatching?.();
  const message = { type: "EVENT", payload: { event: "close", data: { reason } } };
  if (window.parent !== window) {
    window.parent.postMessage(message, "*");
    return;
  }
  window.opener?.postMessage(message, "*");
  if (session?.kind === SessionKind.WITHDRAW && reason === "user_dismissed" && !withdrawalSubmitted) {
    widget.cancelSession({ sid }).catch(() => undefined);
  }
  const back = returnURL(session?.redirectUrl ?? "", reason === "deposit_success" || reason === "withdraw_queued" ? "success" : "cancelled");
  if (back) {
    location.assign(back);
    return;
  }
  mount(root, ...frame(t("close"), h("p", null, t("closeWindow"))));
  window.close();
}

// --- screens shared by both flows -------------------------------------------------------

function showExpired() {
  stopWatching?.();
  mount(root, ...frame(t("expiredTitle"),
    h("p", { class: "notice", role: "alert" }, t("expiredText")),
    h("button", { type: "button", class: "primary", onclick: () => close("user_dismissed") }, t("close"))));
}

function showError(err: ApiError, retry: () => void) {
  if (err.reason === "SESSION_EXPIRED" || err.code === Code.Unauthenticated) return showExpired();
  mount(root, ...frame(t("errorTitle"),
    h("p", { class: "notice", role: "alert" }, err.message && err.code !== Code.Unknown ? err.message : t("errorText")),
    h("button", { type: "button", class: "primary", onclick: retry }, t("retry"))));
}

function networkPicker(list: Chain[], onChange: (chain: Chain, currency: string) => void): HTMLElement {
  const select = h("select", { id: "network", name: "network" },
    list.map((c) => h("option", { value: String(c.chainId) }, c.name)));
  const tokens = h("div", { class: "tokens", role: "radiogroup", "aria-labelledby": "token-label" });
  const renderTokens = () => {
    const c = list.find((x) => String(x.chainId) === select.value) ?? list[0];
    const symbols = [...c.tokens.map((tok) => tok.symbol), c.nativeSymbol];
    tokens.replaceChildren(...symbols.map((s, i) =>
      h("label", { class: "token" },
        h("input", { type: "radio", name: "token", value: s, checked: i === 0, onchange: () => onChange(c, s) }),
        h("span", null, s))));
    onChange(c, symbols[0]);
  };
  select.addEventListener("change", renderTokens);
  queueMicrotask(renderTokens);
  return h("div", { class: "picker" },
    h("label", { for: "network" }, t("network")), select,
    h("span", { id: "token-label", class: "label" }, t("token")), tokens);
}

// --- deposit --------------------------------------------------------------------------------

function showDepositPick(list: Chain[]) {
  let choice: { chain: Chain; currency: string } | undefined;
  const go = h("button", { type: "submit", class: "primary" }, t("continue"));
  const form = h("form", { class: "stack" }, networkPicker(list, (chain, currency) => (choice = { chain, currency })), go);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!choice) return;
    go.disabled = true;
    performance.mark("coffer-address-requested");
    const { chain, currency } = choice;
    try {
      const addr = await widget.getDepositAddress({ sid, chainId: chain.chainId, currency });
      showAddress(list, chain, addr);
    } catch (err) {
      showError(apiError(err), () => showDepositPick(list));
    }
  });
  mount(root, ...frame(t("deposit"), summary(), form));
  // Load-time marks (read by the browser test; visible in any RUM tool).
  if (performance.getEntriesByName("coffer-ready").length === 0) performance.mark("coffer-ready");
}

function showAddress(list: Chain[], chain: Chain, addr: GetDepositAddressResponse) {
  const amount = trimUnits(addr.expectedAmount);
  const qr = encode(addr.paymentUri);
  const n = qr.size + 8;
  const code = svg("svg", { viewBox: `0 0 ${n} ${n}`, class: "qr", role: "img", "aria-label": t("qrLabel", { currency: addr.currency, network: chain.name }), "shape-rendering": "crispEdges" });
  code.appendChild(svg("rect", { width: n, height: n, fill: "#fff" }));
  code.appendChild(svg("path", { d: svgPath(qr), fill: "#000" }));

  const copied = h("span", { class: "copied", role: "status" });
  const copy = h("button", { type: "button", class: "secondary", "aria-label": t("copyAddress"), onclick: async () => {
    try {
      await navigator.clipboard.writeText(addr.address);
      copied.textContent = t("copied");
    } catch {
      getSelection()?.selectAllChildren(address);
      copied.textContent = t("copyFailed");
    }
  } }, t("copy"));
  const address = h("code", { id: "deposit-address", class: "address" }, addr.address);
  const status = h("p", { id: "deposit-status", class: "status", role: "status", "aria-live": "polite" }, t("statusWaiting"));
  const bar = h("progress", { class: "confirmations", max: 1, value: 0, hidden: true, "aria-hidden": "true" });
  const back = h("button", { type: "button", class: "link", onclick: () => { stopWatching?.(); showDepositPick(list); } }, t("back"));

  mount(root, ...frame(t("sendAmount", { amount, currency: addr.currency, network: chain.name }),
    summary(),
    h("div", { class: "pay" },
      code,
      h("div", { class: "stack" },
        h("span", { class: "label" }, t("depositAddress")),
        address,
        h("div", { class: "row" }, copy, copied),
        h("p", { class: "hint" }, t("onlyThis", { currency: addr.currency, network: chain.name })))),
    session?.devWallet ? devWallet(addr, amount) : null,
    h("div", { class: "progress" }, status, bar),
    back));
  performance.mark("coffer-address-shown");

  const update = (deposits: DepositProgress[]) => {
    const view = depositView(deposits, (d) => DepositStatus[d.status]);
    switch (view.kind) {
      case "credited": return showCredited(view.deposits);
      case "failed": return showFailed(view.deposit);
      case "waiting": return;
    }
    const d = view.deposit;
    paymentSeen = true;
    back.hidden = true;
    const seen = t("statusSeen", { amount: trimUnits(d.amount), currency: d.currency });
    if (view.kind !== "following") {
      // Not over: credited with the address's next payments, or once mined again.
      status.textContent = `${seen} ${t(view.kind === "belowMinimum" ? "statusBelowMinimum" : "statusLeftChain")}`;
      bar.hidden = true;
      return;
    }
    if (d.status === DepositStatus.SWEEPING) {
      status.textContent = `${seen} ${t("statusSweeping")}`;
      bar.max = 1;
      bar.value = 1;
    } else {
      const m = Math.max(d.requiredConfirmations, 1);
      status.textContent = `${seen} ${t("statusConfirming", { n: Math.min(d.confirmations, m), m })}`;
      bar.max = m;
      bar.value = Math.min(d.confirmations, m);
    }
    bar.hidden = false;
  };
  stopWatching?.();
  stopWatching = follow(update);
}

/** devWallet is `coffer dev`'s shortcut (the server sets devWallet on no other process): a
 *  button that has the dev faucet pay the shown amount to the shown address (POST /dev/pay),
 *  as a user's wallet would; the deposit then shows up like any other. */
function devWallet(addr: GetDepositAddressResponse, amount: string): HTMLElement {
  const note = h("p", { id: "dev-wallet-status", class: "hint", role: "status" });
  const pay = h("button", { type: "button", id: "dev-wallet-pay", class: "secondary" }, t("devPay"));
  pay.onclick = async () => {
    pay.disabled = true;
    note.textContent = t("devPaying", { amount, currency: addr.currency });
    try {
      const res = await fetch(`${base}/dev/pay`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ sid, currency: addr.currency, chainId: Number(addr.chainId), amount: addr.expectedAmount }),
      });
      const body = await res.json();
      if (body.status !== "success") throw new Error(body.message || `HTTP ${res.status}`);
      note.replaceChildren(`${t("devPaid")} `, h("code", { title: body.data.hash }, shortHash(body.data.hash)));
    } catch (err) {
      note.textContent = t("devPayFailed", { message: err instanceof Error ? err.message : String(err) });
      pay.disabled = false;
    }
  };
  return h("div", { class: "row dev-wallet" }, pay, note);
}

/** follow streams the session's deposits (WatchDeposits). When the stream fails, or sends
 *  nothing within 5 s (its first message comes at once, so a proxy is buffering it), it falls
 *  back to polling ListSessionDeposits every 2 s. It returns the function that stops it. */
function follow(update: (d: DepositProgress[]) => void): () => void {
  const ctl = new AbortController();
  let stopped = false;
  const poll = async () => {
    while (!stopped) {
      try {
        update((await widget.listSessionDeposits({ sid }, { signal: ctl.signal })).deposits);
      } catch (err) {
        if (stopped) return;
        const e = apiError(err);
        if (e.code === Code.Unauthenticated || e.code === Code.PermissionDenied) return showError(e, () => location.reload());
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
  };
  (async () => {
    for (let attempt = 0; !stopped && attempt < 2; attempt++) {
      const first = new AbortController();
      const timer = setTimeout(() => first.abort(), 5000);
      try {
        for await (const msg of widget.watchDeposits({ sid }, { signal: AbortSignal.any ? AbortSignal.any([ctl.signal, first.signal]) : ctl.signal })) {
          clearTimeout(timer);
          attempt = 0;
          update(msg.deposits);
        }
      } catch (err) {
        clearTimeout(timer);
        if (stopped) return;
        const e = apiError(err);
        if (e.code === Code.Unauthenticated || e.code === Code.PermissionDenied) return showError(e, () => location.reload());
      }
    }
    if (!stopped) {
      document.documentElement.dataset.transport = "poll";
      await poll();
    }
  })();
  return () => {
    stopped = true;
    ctl.abort();
  };
}

function showCredited(deposits: DepositProgress[]) {
  stopWatching?.();
  outcome = "deposit_success";
  mount(root, ...frame(t("creditedTitle"),
    h("div", { class: "result ok", "aria-hidden": "true" }, "✓"),
    deposits.map((d) => h("p", { class: "credited" }, t("creditedText", { amount: trimUnits(d.amount), currency: d.currency }))),
    deposits.map((d) => h("p", { class: "hint" }, `${t("tx")}: `, h("code", { title: d.transactionHash }, shortHash(d.transactionHash)))),
    h("button", { type: "button", class: "primary", onclick: () => close("deposit_success") }, t("close"))));
}

function showFailed(d: DepositProgress) {
  stopWatching?.();
  outcome = "deposit_failed";
  mount(root, ...frame(t("failedTitle"),
    h("div", { class: "result bad", "aria-hidden": "true" }, "!"),
    h("p", { role: "alert" }, t("failedText")),
    h("p", { class: "hint" }, `${t("tx")}: `, h("code", null, d.transactionHash)),
    h("button", { type: "button", class: "primary", onclick: () => close("deposit_failed") }, t("close"))));
}

// --- withdraw -------------------------------------------------------------------------------

function showWithdraw(list: Chain[]) {
  let choice: { chain: Chain; currency: string } | undefined;
  let quote: QuoteWithdrawalResponse | undefined;
  let quoteSeq = 0;
  const quoteOut = h("output", { id: "quote", class: "quote", "aria-live": "polite" });
  const input = h("input", { id: "destination", name: "destination", type: "text", inputmode: "text", autocomplete: "off", spellcheck: "false",
    "aria-describedby": "destination-check", placeholder: "0x…" });
  const check = h("p", { id: "destination-check", class: "check", "aria-live": "polite" });
  const submit = h("button", { type: "submit", class: "primary", disabled: true }, t("withdraw"));
  const formError = h("p", { class: "notice", role: "alert", hidden: true });

  const ready = () => {
    const c = checkAddress(input.value);
    submit.disabled = !quote || !(c === "valid" || c === "lowercase");
    if (quote) submit.textContent = t("submit", { amount: trimUnits(quote.cryptoAmount), currency: choice?.currency ?? "" });
  };
  const validate = () => {
    const c = checkAddress(input.value);
    const msg: Partial<Record<typeof c, Key>> = { partial: "addrPartial", invalid: "addrInvalid", checksum: "addrChecksum", lowercase: "addrLowercase", valid: "addrValid" };
    check.textContent = msg[c] ? t(msg[c] as Key) : "";
    check.dataset.state = c;
    input.setAttribute("aria-invalid", String(c === "invalid" || c === "checksum"));
    ready();
  };
  input.addEventListener("input", validate);

  const requote = async () => {
    if (!choice) return;
    const seq = ++quoteSeq;
    quote = undefined;
    quoteOut.textContent = t("quoting");
    input.placeholder = "0x…";
    ready();
    try {
      const q = await widget.quoteWithdrawal({ sid, chainId: choice.chain.chainId, currency: choice.currency });
      if (seq !== quoteSeq) return;
      quote = q;
      quoteOut.replaceChildren(
        h("span", { class: "label" }, t("youReceive")), " ",
        h("strong", null, `${trimUnits(q.cryptoAmount)} ${choice.currency}`),
        q.rate ? h("span", { class: "hint" }, ` (${t("rate")}: 1 ${choice.currency} = ${fiat(q.rate, q.fiatCurrency, lang())})`) : "");
    } catch (err) {
      if (seq !== quoteSeq) return;
      const e = apiError(err);
      if (e.reason === "SESSION_EXPIRED") return showExpired();
      quoteOut.textContent = e.message || t("errorText");
    }
    ready();
  };

  const form = h("form", { class: "stack", novalidate: true },
    networkPicker(list, (chain, currency) => {
      choice = { chain, currency };
      input.setAttribute("aria-label", t("destinationHint", { network: chain.name }));
      void requote();
    }),
    quoteOut,
    h("label", { for: "destination" }, t("destination")),
    input, check, formError, submit);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (submit.disabled || !choice) return;
    submit.disabled = true;
    submit.textContent = t("submitting");
    formError.hidden = true;
    const raw = input.value.trim();
    const address = checkAddress(raw) === "lowercase" ? toChecksum(raw) : raw;
    try {
      const res = await widget.submitWithdrawal({ sid, address, chainId: choice.chain.chainId, currency: choice.currency });
      withdrawalSubmitted = true;
      showQueued(res.status, trimUnits(res.cryptoAmountSent || quote?.cryptoAmount || ""), choice.currency);
    } catch (err) {
      const e = apiError(err);
      if (e.reason === "SESSION_EXPIRED") return showExpired();
      if (e.reason === "WITHDRAW_DENIED") return showDenied(e);
      formError.textContent = e.message || t("errorText");
      formError.hidden = false;
      ready();
    }
  });
  mount(root, ...frame(t("withdraw"), summary(), form));
}

function showQueued(status: WithdrawalStatus, amount: string, currency: string) {
  outcome = "withdraw_queued";
  const key: Key = status === WithdrawalStatus.AWAITING_APPROVAL ? "queuedApproval" : "queuedPending";
  mount(root, ...frame(t("queuedTitle"),
    h("div", { class: "result ok", "aria-hidden": "true" }, "✓"),
    h("p", { id: "withdraw-result", "data-status": WithdrawalStatus[status] }, t(key, { amount, currency })),
    h("button", { type: "button", class: "primary", onclick: () => close("withdraw_queued") }, t("close"))));
}

// showDenied shows the spec's message for the operator's refusal code: the server's text
// (English, or the operator's own description for other codes), translated for codes 1-9.
function showDenied(e: ApiError) {
  withdrawalSubmitted = true; // the session's request is over; dismissing must not cancel again
  const code = Number(e.metadata.errorCode);
  const key = `deny${code}` as Key;
  const text = code >= 1 && code <= 9 && lang() !== "en" ? t(key) : e.message;
  mount(root, ...frame(t("deniedTitle"),
    h("div", { class: "result bad", "aria-hidden": "true" }, "!"),
    h("p", { id: "withdraw-denied", role: "alert", "data-error-code": String(code || "") }, text),
    h("button", { type: "button", class: "primary", onclick: () => close("user_dismissed") }, t("close"))));
}

// --- start ------------------------------------------------------------------------------------

function applyTheme(theme: Theme | undefined) {
  const s = theme?.style;
  if (!s) return;
  const css = document.documentElement.style;
  const set = (name: string, v: string) => v && css.setProperty(name, v);
  set("--primary", s.primaryColor);
  set("--bg", s.backgroundColor);
  set("--text", s.textColor);
  if (s.primaryColor) set("--on-primary", luminance(s.primaryColor) > 0.5 ? "#111111" : "#ffffff");
  if (s.borderRadius || s.borderRadius === 0) css.setProperty("--radius", `${s.borderRadius}px`);
  set("--font", s.fontFamily);
  document.documentElement.dataset.theme = theme?.slug ?? "";
}

function luminance(hex: string): number {
  const n = parseInt(hex.slice(1), 16);
  return (0.299 * (n >> 16) + 0.587 * ((n >> 8) & 255) + 0.114 * (n & 255)) / 255;
}

async function start() {
  document.documentElement.lang = pickLang(params.get("lang"), navigator.language);
  mount(root, h("p", { class: "loading", role: "status" }, t("loading")));
  if (!/^[0-9a-f-]{36}$/i.test(sid)) return showExpired();
  try {
    const [s, list] = await Promise.all([
      widget.getSession({ sid, themeSlug: /^[a-z0-9]+(-[a-z0-9]+)*$/.test(themeSlug) ? themeSlug : "" }),
      chains.listChains({}),
    ]);
    session = s;
    const l = pickLang(params.get("lang"), s.lang, navigator.language);
    document.documentElement.lang = l;
    t = translator(l);
    document.title = `${s.operatorName} · ${t(s.kind === SessionKind.WITHDRAW ? "withdraw" : "deposit")}`;
    applyTheme(s.theme);
    expiresAt = s.expiresAt ? timestampDate(s.expiresAt).getTime() : Date.now();
    if (s.status !== SessionStatus.OPEN) return showExpired();
    if (s.kind === SessionKind.WITHDRAW) showWithdraw(list.chains);
    else showDepositPick(list.chains);
  } catch (err) {
    showError(apiError(err), () => void start());
  }
}

void start();
