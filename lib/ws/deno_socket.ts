/**
 * The only file that touches `Deno.upgradeWebSocket`: it upgrades the request and forwards the
 * socket's events to a runtime-neutral {@linkcode Connection}. Heartbeats are Deno's: after
 * `idleTimeout` seconds without traffic the server pings, and a client that does not answer
 * within another `idleTimeout` is closed (two missed intervals), which ends its leases.
 *
 * @module
 */

import type { Connection, SocketLike } from "./connection.ts";

/** Upgrades `request`; `connect` builds the protocol state for the socket. */
export function upgradeToWebSocket(
  request: Request,
  pingIntervalMs: number,
  connect: (socket: SocketLike) => Connection,
): Response {
  const { socket, response } = Deno.upgradeWebSocket(request, {
    idleTimeout: pingIntervalMs / 1000,
  });
  socket.binaryType = "arraybuffer";
  const connection = connect({
    send: (text) => socket.send(text),
    close: (code, reason) => socket.close(code, reason),
    get bufferedAmount() {
      return socket.bufferedAmount;
    },
  });
  socket.onmessage = (event) => {
    const data = event.data;
    connection.onMessage(typeof data === "string" ? data : new Uint8Array(data as ArrayBuffer));
  };
  socket.onclose = () => connection.onClose();
  socket.onerror = () => {}; // a close event follows; nothing to add
  return response;
}
