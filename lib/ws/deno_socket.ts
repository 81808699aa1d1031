/**
 * Where a WebSocket upgrade is carried out, and the only file that touches
 * `Deno.upgradeWebSocket`. A request the front door parsed itself becomes a
 * `FrameSocket` on the front door's connection (frame_socket.ts); any other (the
 * relayed ones, `--front-door off`) is upgraded by the runtime. Either way the socket's events
 * go to a runtime-neutral {@linkcode Connection}, and the heartbeat is the same: after the ping
 * interval with nothing received the server pings, and a client that does not answer within
 * another interval is closed (two missed intervals), which ends its leases.
 *
 * @module
 */

import { TegamiError } from "../core/errors.ts";
import type { HttpRequest } from "../http/http_request.ts";
import type { Connection, SocketLike } from "./connection.ts";
import { checkHandshake, type MemoryBudget, upgradeHere } from "./frame_socket.ts";
import { PROTOCOL_V2 } from "./protocol.ts";

/** Settings of an upgrade. */
export interface UpgradeOptions {
  /** Heartbeat interval, ms. */
  pingIntervalMs: number;
  /** The largest message the server reads, bytes (the runtime's own limit applies to its sockets). */
  maxMessage: number;
  /** The memory budget the front door's own sockets hold large messages against. */
  budget?: MemoryBudget;
  /**
   * Whether the runtime may upgrade what the front door did not (`--front-door off`). With the
   * front door on, a handshake it did not take (a head over 8 KiB, HTTP/1.0, a connection it
   * relays) is refused: the runtime's sockets are outside its connection limit's eviction and
   * its memory budget, so an unauthenticated client could hold gigabytes through them.
   */
  runtimeUpgrades: boolean;
}

/**
 * Upgrades `request`; `connect` builds the protocol state for the socket, given the protocol
 * version the client asked for: 2 when its `Sec-WebSocket-Protocol` offers
 * {@linkcode PROTOCOL_V2} (which the answer then names), else 1.
 */
export function upgradeToWebSocket(
  request: HttpRequest,
  options: UpgradeOptions,
  connect: (socket: SocketLike, version: 1 | 2) => Connection,
): Response {
  // RFC 6455 §4.2.2 and §4.4: a version this server does not speak is answered 426 with the one
  // it does, so that a client that can fall back knows which.
  const asked = request.headers.get("sec-websocket-version");
  if (asked !== null && asked.trim() !== "13") return versionRefused(asked);
  const offered = request.headers.get("sec-websocket-protocol")?.split(",").map((p) => p.trim());
  const version = offered?.includes(PROTOCOL_V2) ? 2 : 1;
  const protocol = version === 2 ? PROTOCOL_V2 : undefined;
  const own = upgradeHere(request, protocol, options);
  if (own !== null) {
    own.socket.bind(connect(own.socket, version)); // a Connection takes the socket's events
    return own;
  }
  // Every request the front door parsed itself was offered above; what is left came from
  // `Deno.serve` (through the relay, or with --front-door off).
  if (!(request instanceof Request)) {
    throw new TegamiError("internal", "Cannot upgrade: the request did not come from the runtime");
  }
  checkHandshake(request.headers);
  if (!options.runtimeUpgrades) {
    throw new TegamiError(
      "validation_failed",
      "Cannot upgrade: a WebSocket handshake must be a plain HTTP/1.1 request with a head of at " +
        "most 8 KiB, on a connection that has not sent a chunked body or HTTP/1.0 before",
    );
  }
  let upgraded: { socket: WebSocket; response: Response };
  try {
    upgraded = Deno.upgradeWebSocket(request, {
      idleTimeout: options.pingIntervalMs / 1000,
      protocol,
    });
  } catch (error) {
    // The runtime refuses a handshake without `Connection: Upgrade` or `Sec-WebSocket-Key`:
    // the client's malformed request, not a server fault (found by fuzz_http_test.ts).
    throw new TegamiError(
      "validation_failed",
      `Cannot upgrade: not a valid WebSocket handshake (${(error as Error).message.slice(0, 100)})`,
    );
  }
  const { socket, response } = upgraded;
  socket.binaryType = "arraybuffer";
  const connection = connect(
    {
      send: (text) => socket.send(text),
      close: (code, reason) => socket.close(code, reason),
      get bufferedAmount() {
        return socket.bufferedAmount;
      },
    },
    version,
  );
  socket.onmessage = (event) => {
    const data = event.data;
    connection.onMessage(typeof data === "string" ? data : new Uint8Array(data as ArrayBuffer));
  };
  socket.onclose = () => connection.onClose();
  socket.onerror = () => {}; // a close event follows; nothing to add
  return response;
}

/** The answer to a handshake of another WebSocket version than 13: 426, naming 13. */
function versionRefused(asked: string): Response {
  const message = `Cannot upgrade: WebSocket version ${JSON.stringify(asked.slice(0, 20))} is ` +
    "not spoken here; use Sec-WebSocket-Version: 13";
  return new Response(JSON.stringify({ error: { code: "validation_failed", message } }), {
    status: 426,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "sec-websocket-version": "13",
    },
  });
}
