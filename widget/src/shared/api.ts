// Connect-Web transport to Coffer's API through the clients generated into gen/ts.
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import type { DescService } from "@bufbuild/protobuf";

/** apiBase is where the API answers: the <meta name="coffer-api"> the server fills in when it
 *  serves the page (the widget may be served on another origin than the API), else fallback. */
export function apiBase(fallback: string): string {
  const meta = document.querySelector<HTMLMetaElement>('meta[name="coffer-api"]')?.content;
  return (meta || fallback).replace(/\/+$/, "");
}

export function client<S extends DescService>(service: S, baseUrl: string, bearer?: () => string | null): Client<S> {
  const interceptors: Interceptor[] = [];
  if (bearer) {
    interceptors.push((next) => (req) => {
      const token = bearer();
      if (token) req.header.set("Authorization", `Bearer ${token}`);
      return next(req);
    });
  }
  return createClient(service, createConnectTransport({ baseUrl, interceptors }));
}
