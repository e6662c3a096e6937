// @coffer/sdk: Coffer's operator SDK.
export * from "./webhook.js";
