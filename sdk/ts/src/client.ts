// Connect clients for the operator API, authenticated with the operator key.
//
//   const coffer = createClient("https://pay.example.com", process.env.COFFER_OPERATOR_KEY!);
//   const { url } = await coffer.sessions.createDepositSession({ externalUserId: "user-1", ... });
//
// The transport is Connect over fetch by default, or gRPC-Web; on Node, createNodeClient (from
// "@coffer/sdk/node") speaks gRPC too.
import { createClient as connectClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";

import { BalanceService } from "./gen/coffer/v1/funds_pb.js";
import { ChainService } from "./gen/coffer/v1/chain_pb.js";
import { DepositService } from "./gen/coffer/v1/deposit_pb.js";
import { DepositorService } from "./gen/coffer/v1/depositor_pb.js";
import { EventService } from "./gen/coffer/v1/event_feed_pb.js";
import { SessionService } from "./gen/coffer/v1/session_pb.js";
import { WithdrawalService } from "./gen/coffer/v1/withdrawal_pb.js";
import { jsonSafe } from "./json.js";

/** One client per operator-facing service. */
export interface CofferClient {
  sessions: Client<typeof SessionService>;
  depositors: Client<typeof DepositorService>;
  withdrawals: Client<typeof WithdrawalService>;
  chains: Client<typeof ChainService>;
  balances: Client<typeof BalanceService>;
  deposits: Client<typeof DepositService>;
  /**
   * The event feed: listEvents (after a cursor), subscribeEvents (a server stream: pass
   * `{ timeoutMs: 0, signal }` as call options, since the per-call timeout would end it;
   * resume with the last message's cursor), redeliverEvent.
   */
  events: Client<typeof EventService>;
}

export interface ClientOptions {
  /** "connect" (default), "grpc-web", or a ready Transport (e.g. connect-node's gRPC one). */
  transport?: "connect" | "grpc-web" | Transport;
  /** The fetch to use (default: globalThis.fetch). */
  fetch?: typeof globalThis.fetch;
  /** Per-call timeout in milliseconds (default 30,000). */
  timeoutMs?: number;
  /** More interceptors, run after the SDK's own. */
  interceptors?: Interceptor[];
}

/** The default per-call timeout. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Sends the operator key as a Bearer credential on every call. */
export function bearer(operatorKey: string): Interceptor {
  return (next) => async (req) => {
    req.header.set("Authorization", `Bearer ${operatorKey}`);
    return next(req);
  };
}

/** The SDK's interceptors: the key, then JSON-safe responses, then the caller's. */
export function interceptors(operatorKey: string, more: Interceptor[] = []): Interceptor[] {
  return [bearer(operatorKey), jsonSafe, ...more];
}

/** Builds the clients over a transport. */
export function clientsFor(transport: Transport): CofferClient {
  return {
    sessions: connectClient(SessionService, transport),
    depositors: connectClient(DepositorService, transport),
    withdrawals: connectClient(WithdrawalService, transport),
    chains: connectClient(ChainService, transport),
    balances: connectClient(BalanceService, transport),
    deposits: connectClient(DepositService, transport),
    events: connectClient(EventService, transport),
  };
}

/** Clients for baseUrl ("https://pay.example.com") that authenticate with the operator key. */
export function createClient(baseUrl: string, operatorKey: string, options: ClientOptions = {}): CofferClient {
  const t = options.transport ?? "connect";
  if (typeof t !== "string") return clientsFor(t);
  const settings = {
    baseUrl: baseUrl.replace(/\/+$/, ""),
    interceptors: interceptors(operatorKey, options.interceptors),
    defaultTimeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    fetch: options.fetch,
  };
  return clientsFor(t === "grpc-web" ? createGrpcWebTransport(settings) : createConnectTransport(settings));
}
