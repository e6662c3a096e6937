// @coffer/sdk: Coffer's operator SDK. Clients over Connect or gRPC-Web (any runtime with
// fetch), typed error codes, webhook verification and parsing. Node's gRPC client and the
// http/Express webhook middleware are in "@coffer/sdk/node".
export * from "./client.js";
export * from "./errors.js";
export * from "./json.js";
export * from "./webhook.js";
export * as messages from "./messages.js";
