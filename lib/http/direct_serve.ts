/**
 * `--front-door off`: `Deno.serve` on the public address directly, for deployments behind a
 * reverse proxy that enforces its own connection limits and timeouts. It keeps the one promise
 * that needs no connection hook: descriptor exhaustion never ends the process. Deno 2.9.6 turns
 * an accept error (EMFILE) into a rejection of `server.finished`; it is caught here, and the
 * listener is re-opened on the same port with back-off while the connections already open keep
 * being served (measured). What this mode cannot do: count connections, time out idle or
 * half-sent ones, or cut them at shutdown — see docs/operations.md.
 *
 * @module
 */

import type { Logger } from "../observe/log.ts";
import { type FrontDoor, type FrontDoorEvent, isDescriptorExhaustion } from "./front_door.ts";
import { judgeServed, refusalAnswer } from "./request_target.ts";
import { toResponse } from "./respond.ts";

/** Options of {@linkcode openDirectServe}. */
export interface DirectServeOptions {
  /** Interface to listen on. */
  hostname: string;
  /** Port; 0 picks a free one (kept when the listener is re-opened). */
  port: number;
  /** TLS certificate and key (PEM). */
  tls?: { cert: string; key: string };
  /** Answers a request. */
  handler: (request: Request) => Promise<Response>;
  /** The log. */
  log: Logger;
  /** Counts events for the metrics (`accept_error` here). */
  onEvent?: (event: FrontDoorEvent) => void;
}

const BACKOFF_MIN_MS = 5;
const BACKOFF_MAX_MS = 1000;
const WARN_EVERY_MS = 10_000;

/** Serves with `Deno.serve` directly; answers the same interface as the front door. */
export function openDirectServe(options: DirectServeOptions): FrontDoor {
  const { log } = options;
  const servers: Deno.HttpServer<Deno.NetAddr>[] = [];
  let inFlight = 0;
  let stopping = false;
  let lastWarn = -Infinity;
  // Over TLS the runtime speaks HTTP/2 with whoever offers it (ALPN) and does not tell which
  // version a request came in: one without `Host` is taken as HTTP/2's, named by `:authority`.
  const http2 = options.tls !== undefined;
  const handler = async (request: Request) => {
    // The rule the front door applies, before the API sees the URL the runtime made.
    const refusal = judgeServed(request.method, request.url, request.headers.get("host"), http2);
    if (refusal !== null) return toResponse(refusalAnswer(refusal));
    inFlight++;
    try {
      return await options.handler(request);
    } finally {
      inFlight--;
    }
  };
  const serve = (port: number): Deno.HttpServer<Deno.NetAddr> => {
    const server = Deno.serve({
      hostname: options.hostname,
      port,
      onListen: () => {},
      ...options.tls,
    }, handler);
    servers.push(server);
    server.finished.catch((error) => {
      if (stopping) return;
      options.onEvent?.("accept_error");
      if (performance.now() - lastWarn > WARN_EVERY_MS) {
        lastWarn = performance.now();
        log.warn("Cannot accept connections: the listener failed; re-opening it", {
          error: String(error).slice(0, 200),
          out_of_descriptors: isDescriptorExhaustion(error),
        });
      }
      void reopen(server.addr.port);
    });
    return server;
  };
  const reopen = async (port: number) => {
    for (let backoff = BACKOFF_MIN_MS; !stopping; backoff = Math.min(BACKOFF_MAX_MS, backoff * 2)) {
      await new Promise((resolve) => setTimeout(resolve, backoff));
      if (stopping) return;
      try {
        serve(port);
        return;
      } catch {
        // Still out of descriptors (or the port not yet free): try again later.
      }
    }
  };
  const first = serve(options.port);
  return {
    addr: first.addr,
    get connections() {
      return inFlight; // requests in flight: this mode cannot see connections
    },
    async shutdown(graceMs: number) {
      stopping = true;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const graceful = Promise.all(servers.map((s) => s.shutdown().catch(() => {})));
      // After the grace period the caller closes the store and the process exits: the
      // connections still open go with it.
      await Promise.race([
        graceful,
        new Promise((resolve) => timer = setTimeout(resolve, graceMs)),
      ]);
      clearTimeout(timer);
    },
  };
}
