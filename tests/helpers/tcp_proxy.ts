/**
 * A TCP proxy a test can cut and restore, standing between a server and its database to
 * play an outage: `cut()` drops every connection and stops listening, so new connections are
 * refused as by a host whose database is down; `restore()` listens on the same port again.
 *
 * @module
 */

/** A running proxy. */
export interface TcpProxy extends AsyncDisposable {
  /** The local port to connect to. */
  readonly port: number;
  /** Drops every open connection and refuses new ones until {@linkcode TcpProxy.restore}. */
  cut(): void;
  /** Accepts and forwards connections again. */
  restore(): void;
  /** Connections forwarded so far. */
  readonly accepted: number;
}

/** Starts a proxy on a free loopback port forwarding to `targetPort` on 127.0.0.1. */
export function startTcpProxy(targetPort: number): TcpProxy {
  let listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const open = new Set<AbortController>();
  let cut = false;
  let accepted = 0;
  const pipe = async (from: Deno.Conn, to: Deno.Conn, line: AbortController) => {
    try {
      await from.readable.pipeTo(to.writable, { signal: line.signal });
    } catch {
      // the other side went away, or the proxy cut the line
    }
    line.abort();
    open.delete(line);
    for (const conn of [from, to]) {
      try {
        conn.close();
      } catch {
        // already closed (pipeTo closes the streams it ends)
      }
    }
  };
  const serve = async (listener: Deno.Listener) => {
    for await (const client of listener) {
      accepted++;
      let upstream: Deno.Conn;
      try {
        upstream = await Deno.connect({ hostname: "127.0.0.1", port: targetPort });
      } catch {
        client.close();
        continue;
      }
      const line = new AbortController();
      open.add(line);
      pipe(client, upstream, line);
      pipe(upstream, client, line);
    }
  };
  let serving = serve(listener).catch(() => {});
  const dropAll = () => {
    for (const line of open) line.abort();
    open.clear();
  };
  return {
    port,
    get accepted() {
      return accepted;
    },
    cut: () => {
      if (cut) return;
      cut = true;
      listener.close();
      dropAll();
    },
    restore: () => {
      if (!cut) return;
      cut = false;
      listener = Deno.listen({ hostname: "127.0.0.1", port });
      serving = serve(listener).catch(() => {});
    },
    [Symbol.asyncDispose]: async () => {
      if (!cut) listener.close();
      cut = true;
      dropAll();
      await serving;
    },
  };
}
