/**
 * How the producer sends its requests: through the standard `fetch` everywhere, and on Node
 * through an HTTP/1.1 client of its own on `node:net` for `http://` (node_http1.ts) and
 * `node:https` with a keep-alive agent for `https://`. Node's `fetch` is undici's, which builds a
 * `Request`, a `Response` and WHATWG streams for every call, and `node:http` a `ClientRequest`
 * and an `IncomingMessage`: both cost a Node producer more CPU per request; the answers are the
 * same.
 *
 * @module
 */

import { nodeBuiltin } from "./node_runtime.ts";
import { type Answer, Http1Client } from "./node_http1.ts";
import type { NodeNet } from "./node_runtime.ts";

/**
 * Sends one request and answers its status and body; rejects when the server cannot be reached
 * (a network error, as `fetch` rejects).
 */
export type Transport = (
  method: string,
  url: string,
  headers: Record<string, string>,
  body: string | undefined,
) => Promise<Answer>;

/** A transport over a `fetch` function. */
export function fetchTransport(fetcher: typeof fetch): Transport {
  return async (method, url, headers, body) => {
    const response = await fetcher(url, { method, headers, body });
    return { status: response.status, text: await response.text() };
  };
}

/** What this module uses of `node:https`. */
interface NodeHttp {
  Agent: new (options: { keepAlive: boolean }) => unknown;
  request(
    url: string,
    options: { method: string; headers: Record<string, string | number>; agent: unknown },
    callback: (response: IncomingMessage) => void,
  ): ClientRequest;
}
interface IncomingMessage {
  statusCode?: number;
  setEncoding(encoding: "utf8"): void;
  on(event: "data", listener: (chunk: string) => void): void;
  on(event: "end", listener: () => void): void;
  on(event: "error", listener: (error: unknown) => void): void;
}
interface ClientRequest {
  on(event: "error", listener: (error: unknown) => void): void;
  end(body?: Uint8Array): void;
}

/**
 * The connections, shared by every client of the process (as fetch's pool is): a pool per host for
 * `http://`, a keep-alive agent for `https://`.
 */
let agents: { plain: Http1Client; https: NodeHttp; tls: unknown } | null = null;

const encoder = new TextEncoder();

/** The transport over `node:net` and `node:https` when running on Node, else null. */
export function nodeTransport(): Transport | null {
  if (agents === null) {
    const net = nodeBuiltin<NodeNet>("node:net");
    const https = nodeBuiltin<NodeHttp>("node:https");
    if (net === null || https === null) return null;
    agents = {
      plain: new Http1Client(net),
      https,
      tls: new https.Agent({ keepAlive: true }),
    };
  }
  const { plain, https, tls } = agents;
  return (method, url, headers, body) => {
    if (url.startsWith("http:")) return plain.request(method, url, headers, body);
    return new Promise((resolve, reject) => {
      const bytes = body === undefined ? undefined : encoder.encode(body);
      // A length, never chunked: every server and proxy reads it.
      const sent: Record<string, string | number> = { ...headers };
      if (bytes !== undefined) sent["content-length"] = bytes.length;
      const request = https.request(
        url,
        { method, headers: sent, agent: tls },
        (response) => {
          let text = "";
          response.setEncoding("utf8");
          response.on("data", (chunk) => text += chunk);
          response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
          response.on("error", reject);
        },
      );
      request.on("error", reject);
      request.end(bytes);
    });
  };
}
