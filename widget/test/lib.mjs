// Shared helpers of the browser tests. The Go test TestBrowser (server/internal/webui) starts
// Coffer, the dev chain and a control server, and passes their addresses and credentials in
// COFFER_BROWSER_TEST; each *.test.mjs file uses them through cfg.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { chromium } from "playwright-core";

export const cfg = JSON.parse(process.env.COFFER_BROWSER_TEST ?? "null");
if (!cfg) {
  throw new Error("run the browser tests through the Go test: go test ./server/internal/webui -run TestBrowser");
}

export function launch() {
  return chromium.launch({
    executablePath: cfg.chromium,
    args: ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking"],
  });
}

let shots = 0;
/** shot saves a numbered screenshot under widget/test-results. */
export async function shot(page, name) {
  shots++;
  const path = join(cfg.results, `${String(shots).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

export function figure(name, value) {
  console.log(`FIGURE ${name}: ${value}`);
}

async function json(res) {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${res.status} ${text}`);
  }
}

/** rest calls a legacy REST endpoint and returns {status, body}. */
export async function rest(method, path, { bearer, body } = {}) {
  const headers = {};
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(cfg.api + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: await json(res) };
}

/** rpc calls a Connect method with JSON (what buf curl does) and returns {status, body}. */
export async function rpc(service, method, body, bearer) {
  const headers = { "Content-Type": "application/json" };
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  const res = await fetch(`${cfg.api}/coffer.v1.${service}/${method}`, { method: "POST", headers, body: JSON.stringify(body ?? {}) });
  return { status: res.status, body: await json(res) };
}

/** createSession opens a session over REST with an operator key, as an operator's backend does. */
export async function createSession(kind, operatorKey, fields = {}) {
  const { status, body } = await rest("POST", `/session/${kind}`, {
    bearer: operatorKey,
    body: { externalUserId: `user-${Math.random().toString(16).slice(2, 10)}`, lang: "en", platformFiatCurrency: "USD", userBalance: "100.00", amount: "25.00", ...fields },
  });
  if (status !== 200) throw new Error(`create ${kind} session: ${status} ${JSON.stringify(body)}`);
  const url = body.data.url;
  return { url, sid: new URL(url).searchParams.get("sid"), sessionRef: body.data.sessionRef };
}

export async function control(path, body) {
  const res = await fetch(cfg.control + path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`control ${path}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? null : res.json();
}

/** pay sends amount (smallest units) of currency to address on the dev chain. */
export function pay(address, currency, amount) {
  return control("/pay", { address, currency, amount: String(amount) });
}

export async function adminLogin(email = cfg.admin.email, password = cfg.admin.password) {
  const { status, body } = await rest("POST", "/admin/login", { body: { email, password } });
  if (status !== 200) throw new Error(`admin login: ${status} ${JSON.stringify(body)}`);
  return body.token;
}

/** decodeQR reads the QR code in a PNG with zbarimg; null when zbarimg is not installed. */
export function decodeQR(png) {
  try {
    return execFileSync("zbarimg", ["--raw", "-q", png], { stdio: ["ignore", "pipe", "ignore"] }).toString("utf8").replace(/\n$/, "");
  } catch (e) {
    if (e.code === "ENOENT") return null;
    throw new Error(`zbarimg could not read ${png}`);
  }
}

/** bundleGzip is the gzip size of the embedded widget build (every file). */
export function bundleGzip(app = "widget") {
  const dir = new URL(`../../server/internal/webui/dist/${app}/`, import.meta.url).pathname;
  const walk = (d) => readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));
  return walk(dir).reduce((n, f) => n + gzipSync(readFileSync(f), { level: 9 }).length, 0);
}

/** until polls fn until it returns a truthy value. */
export async function until(what, fn, timeoutMs = 30000, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
