/**
 * How the producer sends its requests: through the standard `fetch` everywhere, and on Node
 * through `node:http` (or `node:https`) with a keep-alive agent. Node's `fetch` is undici's,
 * which builds a `Request`, a `Response` and WHATWG streams for every call and costs a Node
 * producer more CPU per request than `node:http` does; the answers are the same.
 *
 * @module
 */

import { nodeBuiltin } from "./node_runtime.ts";

/** An answer: its status and its body as text. */
export interface Answer {
  /** The HTTP status. */
  status: number;
  /** The body, decoded as UTF-8. */
  text: string;
}

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

/** What this module uses of `node:http` and `node:https`. */
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

/** One keep-alive agent per scheme, shared by every client of the process (as fetch's pool is). */
let agents: { http: NodeHttp; https: NodeHttp; plain: unknown; tls: unknown } | null = null;

const encoder = new TextEncoder();

/** The transport over `node:http` and `node:https` when running on Node, else null. */
export function nodeTransport(): Transport | null {
  if (agents === null) {
    const http = nodeBuiltin<NodeHttp>("node:http");
    const https = nodeBuiltin<NodeHttp>("node:https");
    if (http === null || https === null) return null;
    agents = {
      http,
      https,
      plain: new http.Agent({ keepAlive: true }),
      tls: new https.Agent({ keepAlive: true }),
    };
  }
  const { http, https, plain, tls } = agents;
  return (method, url, headers, body) =>
    new Promise((resolve, reject) => {
      const secure = url.startsWith("https:");
      const bytes = body === undefined ? undefined : encoder.encode(body);
      // A length, never chunked: every server and proxy reads it.
      const sent: Record<string, string | number> = { ...headers };
      if (bytes !== undefined) sent["content-length"] = bytes.length;
      const request = (secure ? https : http).request(
        url,
        { method, headers: sent, agent: secure ? tls : plain },
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
}
