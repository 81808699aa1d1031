/**
 * A TCP proxy in front of PostgreSQL that can cut a connection at a statement, for tests of what a
 * server does when the database's answer never comes: `before` drops the connection instead of
 * passing the statement on (the transaction is aborted), `after` passes it on and drops the
 * connection before the answer comes back (a COMMIT so passed is made, and nobody hears of it).
 * It recognises the statement by its text, which the driver sends the first time a connection
 * runs it (later runs name the prepared statement only): cut a fresh connection.
 */

/** A running proxy. */
export interface CuttingProxy extends AsyncDisposable {
  /** `url` with the proxy's host and port. */
  readonly url: string;
  /** Cuts the next connection that sends a statement matching `statement`, once. */
  cut(when: "before" | "after", statement?: RegExp): void;
  /** Connections cut so far. */
  readonly cuts: number;
}

/** Starts a proxy to the database of `url` on a free loopback port. */
export function startCuttingProxy(url: string): CuttingProxy {
  const target = new URL(url);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  let armed: "before" | "after" | null = null;
  let pattern = /commit/i;
  let cuts = 0;
  const close = (conn: Deno.Conn) => {
    open.delete(conn);
    try {
      conn.close();
    } catch { /* closed already */ }
  };
  const serve = async (client: Deno.Conn) => {
    const server = await Deno.connect({
      hostname: target.hostname,
      port: Number(target.port || 5432),
    });
    open.add(client).add(server);
    const pump = async (from: Deno.Conn, to: Deno.Conn, watch: boolean) => {
      const buffer = new Uint8Array(64 * 1024);
      try {
        for (;;) {
          const n = await from.read(buffer);
          if (n === null) break;
          const chunk = buffer.subarray(0, n);
          const when = armed;
          if (watch && when !== null && pattern.test(new TextDecoder().decode(chunk))) {
            armed = null;
            cuts++;
            if (when === "after") await to.write(chunk);
            break;
          }
          await to.write(chunk);
        }
      } catch { /* either side went away */ }
      close(client);
      close(server);
    };
    void pump(client, server, true);
    void pump(server, client, false);
  };
  void (async () => {
    try {
      for await (const conn of listener) void serve(conn).catch(() => close(conn));
    } catch { /* the listener closed */ }
  })();
  const proxied = new URL(url);
  proxied.hostname = "127.0.0.1";
  proxied.port = String((listener.addr as Deno.NetAddr).port);
  return {
    url: proxied.href,
    cut: (when, statement = /commit/i) => {
      armed = when;
      pattern = statement;
    },
    get cuts() {
      return cuts;
    },
    [Symbol.asyncDispose]: () => {
      listener.close();
      for (const conn of [...open]) close(conn);
      return Promise.resolve();
    },
  };
}
