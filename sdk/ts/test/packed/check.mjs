// Run by server/internal/app/tssdk_test.go in an empty directory where the output of
// `npm pack` was installed: it uses the package exactly as an operator would, against a live
// Coffer, and prints what it saw as JSON. Env: COFFER_URL, COFFER_KEY, WEBHOOK (a signed
// webhook as JSON {headers, body}).
import http from "node:http";
import { createClient, errorCode, errorField, constructEvent, isDeposit, ReplyCode } from "@coffer/sdk";
import { createNodeClient, webhookHandler } from "@coffer/sdk/node";

const url = process.env.COFFER_URL;
const key = process.env.COFFER_KEY;
const out = {};

const connect = createClient(url, key);
const session = await connect.sessions.createDepositSession({
  externalUserId: "ts-user", lang: "en", platformFiatCurrency: "USD", userBalance: "0.00", amount: "25.00",
});
out.sessionUrl = session.url;
const chains = await connect.chains.listChains({});
out.chainsJson = JSON.stringify(chains); // int64 chain ids serialise
out.grpcWebChains = (await createClient(url, key, { transport: "grpc-web" }).chains.listChains({})).chains.length;
out.grpcChains = (await createNodeClient(url, key).chains.listChains({})).chains.length;
try {
  await connect.sessions.createDepositSession({
    externalUserId: "ts-user", lang: "en", platformFiatCurrency: "USD", userBalance: "0.00", amount: "-3",
  });
} catch (err) {
  out.badAmount = { code: errorCode(err), field: errorField(err) };
}
try {
  await createClient(url, "sk_wrong").depositors.checkDepositor({ externalUserId: "u" });
} catch (err) {
  out.wrongKey = errorCode(err);
}

const hook = JSON.parse(process.env.WEBHOOK);
const event = await constructEvent(hook.body, hook.headers, key);
out.event = { deposit: isDeposit(event), externalUserId: event.externalUserId };
try {
  await constructEvent(hook.body + "&x=1", hook.headers, key);
} catch (err) {
  out.tampered = err.name;
}

// The http middleware answers Coffer's JSON.
const server = http.createServer(webhookHandler(key, ({ event: e, id }) => ({
  error: isDeposit(e) ? ReplyCode.OK : ReplyCode.DECLINED_BY_OPERATOR, description: `credited ${id}`,
})));
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const hookUrl = `http://127.0.0.1:${server.address().port}/`;
const ok = await fetch(hookUrl, { method: "POST", headers: hook.headers, body: hook.body });
out.middleware = { status: ok.status, reply: await ok.json() };
const bad = await fetch(hookUrl, { method: "POST", headers: { ...hook.headers, "webhook-signature": "v1,AAAA" }, body: hook.body });
out.middlewareBadSignature = { status: bad.status, reply: await bad.json() };
server.close();

console.log(JSON.stringify(out));
