/**
 * A TCP proxy a test can cut and restore, standing between a server and its database to
 * play an outage: `cut()` drops every connection and stops listening, so new connections are
 * refused as by a host whose database is down; `restore()` listens on the same port again.
 * `cutAt()` drops one connection at a statement instead, to play a COMMIT whose answer is lost.
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
  /**
   * Drops the next connection whose client sends a chunk matching `statement` (by its text,
   * which PostgreSQL's driver sends the first time a connection runs a statement: use a fresh
   * connection), once: `before` drops it instead of passing the chunk on (the database aborts
   * the transaction), `after` passes it on and drops the connection before anything more comes
   * back (a COMMIT so passed is made, and its answer never arrives).
   */
  cutAt(when: "before" | "after", statement?: RegExp): void;
  /** Connections dropped by {@linkcode TcpProxy.cutAt} so far. */
  readonly cutsAt: number;
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
  let armed: { when: "before" | "after"; statement: RegExp } | null = null;
  let cutsAt = 0;
  const decoder = new TextDecoder();
  const pipe = async (
    from: Deno.Conn,
    to: Deno.Conn,
    line: AbortController,
    through: TransformStream<Uint8Array, Uint8Array>,
  ) => {
    try {
      await from.readable.pipeThrough(through).pipeTo(to.writable, { signal: line.signal });
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
      // Once this line is cut at a statement, nothing more comes back to the client.
      let muted = false;
      const up = new TransformStream<Uint8Array, Uint8Array>({
        transform: (chunk, controller) => {
          const at = armed;
          if (at === null || !at.statement.test(decoder.decode(chunk))) {
            controller.enqueue(chunk);
            return;
          }
          armed = null;
          cutsAt++;
          muted = true;
          if (at.when === "after") controller.enqueue(chunk);
          controller.terminate(); // the chunk is written, then the line closes
        },
      });
      const down = new TransformStream<Uint8Array, Uint8Array>({
        transform: (chunk, controller) => {
          if (!muted) controller.enqueue(chunk);
        },
      });
      pipe(client, upstream, line, up);
      pipe(upstream, client, line, down);
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
    cutAt: (when, statement = /commit/i) => {
      armed = { when, statement };
    },
    get cutsAt() {
      return cutsAt;
    },
    [Symbol.asyncDispose]: async () => {
      if (!cut) listener.close();
      cut = true;
      dropAll();
      await serving;
    },
  };
}
