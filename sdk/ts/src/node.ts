// Node-only parts of the SDK ("@coffer/sdk/node"): clients over connect-node (gRPC, gRPC-Web
// or Connect over HTTP/1.1 or HTTP/2) and webhook middleware for Node's http and Express.
import type { IncomingMessage, ServerResponse } from "node:http";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import type { Interceptor } from "@connectrpc/connect";

import { clientsFor, DEFAULT_TIMEOUT_MS, interceptors, type CofferClient } from "./client.js";
import {
  constructEvent,
  isTest,
  WebhookParseError,
  WebhookVerificationError,
  type Reply,
  type VerifyOptions,
  type WebhookEvent,
} from "./webhook.js";

export interface NodeClientOptions {
  /** "grpc" (HTTP/2, default), "connect" or "grpc-web". */
  protocol?: "grpc" | "connect" | "grpc-web";
  /** For connect and grpc-web: "1.1" (default) or "2". gRPC is always HTTP/2. */
  httpVersion?: "1.1" | "2";
  timeoutMs?: number;
  interceptors?: Interceptor[];
}

/** Clients over connect-node, for servers: gRPC by default. */
export function createNodeClient(baseUrl: string, operatorKey: string, options: NodeClientOptions = {}): CofferClient {
  const settings = {
    baseUrl: baseUrl.replace(/\/+$/, ""),
    interceptors: interceptors(operatorKey, options.interceptors),
    defaultTimeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  };
  switch (options.protocol ?? "grpc") {
    case "grpc":
      return clientsFor(createGrpcTransport(settings));
    case "grpc-web":
      return clientsFor(createGrpcWebTransport({ ...settings, httpVersion: options.httpVersion ?? "1.1" }));
    default:
      return clientsFor(createConnectTransport({ ...settings, httpVersion: options.httpVersion ?? "1.1" }));
  }
}

/** One verified webhook as the handler gets it. */
export interface ReceivedEvent {
  /** webhook-id: the same on every attempt; deduplicate on it (DEPOSIT: idempotencyKey too). */
  id: string;
  test: boolean;
  event: WebhookEvent;
}

export type EventHandler = (received: ReceivedEvent) => Reply | Promise<Reply>;

export interface HandlerOptions extends VerifyOptions {
  /** The largest body read (default 65,536 bytes). */
  maxBodyBytes?: number;
  /** Receives what handle threw, with the event, for the operator's own logs: Coffer, which
   *  records answers, gets only INTERNAL_ERROR_DESCRIPTION. */
  onError?: (err: unknown, event: WebhookEvent) => void;
}

/** The description of the 500 answer when handle throws; the error's own text stays with the
 *  operator (HandlerOptions.onError). */
export const INTERNAL_ERROR_DESCRIPTION = "internal error";

function send(res: ServerResponse, status: number, reply: Reply): void {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(reply));
}

async function readBody(req: IncomingMessage & { body?: unknown }, limit: number): Promise<Uint8Array | null> {
  // Express with express.raw() (or any middleware that kept the raw bytes) leaves a Buffer.
  if (req.body instanceof Uint8Array) return req.body.length > limit ? null : req.body;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * A Node http request listener for the operator's webhook URL: it reads the raw body, verifies
 * the signature with the operator key before anything else, parses the event, calls handle and
 * answers its Reply as JSON. Refusals carry a non-zero error: 405 (not POST), 413 (too large),
 * 401 (signature or timestamp), 400 (body does not parse), 500 (handle threw).
 */
export function webhookHandler(
  key: string | Uint8Array,
  handle: EventHandler,
  options: HandlerOptions = {},
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const limit = options.maxBodyBytes ?? 64 * 1024;
  return async (req, res) => {
    if (req.method !== "POST") {
      res.setHeader("Allow", "POST");
      return send(res, 405, { error: 3, description: "webhooks are POSTed" });
    }
    const body = await readBody(req, limit);
    if (body === null) return send(res, 413, { error: 3, description: "body too large" });
    let event: WebhookEvent;
    try {
      event = await constructEvent(body, req.headers, key, options);
    } catch (err) {
      if (err instanceof WebhookVerificationError) return send(res, 401, { error: 3, description: err.message });
      if (err instanceof WebhookParseError) return send(res, 400, { error: 3, description: err.message });
      throw err;
    }
    try {
      const id = String(req.headers["webhook-id"] ?? "");
      const reply = await handle({ id, test: isTest(event), event });
      send(res, 200, { ...reply, description: reply.description || (reply.error === 0 ? "ok" : "") });
    } catch (err) {
      send(res, 500, { error: 3, description: INTERNAL_ERROR_DESCRIPTION });
      try {
        options.onError?.(err, event);
      } catch {
        // A failing log hook must not turn the answer into an unhandled rejection.
      }
    }
  };
}

/**
 * Express middleware for the webhook route. Mount it before any body parser for that route
 * (or after express.raw({ type: "*\/*" })): a parsed form body cannot be verified.
 *
 *   app.post("/coffer/webhook", expressWebhook(process.env.COFFER_OPERATOR_KEY!, handle));
 */
export function expressWebhook(
  key: string | Uint8Array,
  handle: EventHandler,
  options: HandlerOptions = {},
): (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void {
  const listener = webhookHandler(key, handle, options);
  return (req, res, next) => {
    listener(req, res).catch(next);
  };
}
