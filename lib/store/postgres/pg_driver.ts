/**
 * The one file that imports the PostgreSQL driver, `npm:postgres` (porsager/postgres). Why this
 * driver rather than `npm:pg`, under Deno through an `npm:` specifier:
 *
 * - Pipelining: queries issued together on one connection go out without waiting for each
 *   other's answers (several times faster for many small queries), and a transaction can pipeline its statements too. `pg` sends one query per round trip.
 * - LISTEN survives a lost connection: `sql.listen()` reconnects by itself and runs its
 *   `onlisten` callback after every (re)connect, which is where the store's catch-up poll hangs.
 *   With `pg` the application rebuilds the listening client itself.
 * - Prepared statements by default (named, cached per connection), TLS from the URL's
 *   `sslmode=require` through `node:tls`, and no native addon, so nothing to build.
 *
 * Only the PostgreSQL store imports this file, and the server loads that store with a dynamic
 * `import()` when `--db` is a `postgres://` URL, so a SQLite server never loads the driver.
 *
 * @module
 */

import * as tls from "node:tls";
import postgres from "postgres";
import type { Options, Sql as DriverSql, TransactionSql } from "postgres";
import { TegamiError } from "../../core/errors.ts";
import { postgresUrlProblem } from "./pg_url.ts";

/** A connection pool (the driver's tagged-template `sql`). */
export type Sql = DriverSql<{ bigint: number }>;

/** A transaction's `sql`, valid inside `sql.begin()`. */
export type TxSql = TransactionSql<{ bigint: number }>;
/** A statement or a piece of one, as the driver builds it, to run or to place in another. */
export type SqlFragment = ReturnType<TxSql["unsafe"]>;

/** Options of {@linkcode connectPg}. */
export interface PgConnectOptions {
  /** The schema every unqualified name resolves in. */
  schema: string;
  /** Most connections in the pool. */
  max: number;
  /** Seconds to wait for a connection before giving up. @default 5 */
  connectTimeoutS?: number;
  /** More session settings for the pool's connections (`{ enable_sort: "off" }`). */
  settings?: Record<string, string>;
  /** The `application_name` the database shows for them. @default "tegami" */
  applicationName?: string;
}

let guarded = false;

/**
 * The error the driver (3.4.9) can throw from a timer after its connection closed: a write it
 * had scheduled finds the socket gone (`Cannot read properties of null (reading 'write')` in
 * connection.js). The query it belonged to has already failed and been answered.
 */
function isWriteAfterClose(error: unknown): boolean {
  return error instanceof TypeError && /reading 'write'/.test(error.message) &&
    /\/postgres\/src\/connection\.js/.test(String(error.stack));
}

/**
 * A socket error of Deno's `node:net` (which only the driver uses here) left as a rejected promise
 * nobody waits on. While PostgreSQL restarted, such rejections ended a server twice in about 80
 * campaigns: `Uncaught (in promise) Error: connect ECONNREFUSED … at _afterConnectImpl
 * (ext:deno_node/net.ts)` and `Error: read ECONNRESET at TCPWrap.onStreamRead
 * (ext:deno_node/internal/stream_base_commons.ts)`, with no frame of the driver's or tegami's on
 * the stack. The driver hears of the same failure through its socket's "error" event and acts on
 * it; nobody awaits the promise. So: a system error (`syscall`, an `E…` code) whose every frame is
 * the runtime's own `node:` code.
 */
function isLeftSocketError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const { syscall, code } = error as { syscall?: unknown; code?: unknown };
  if (typeof syscall !== "string" || typeof code !== "string" || !/^E[A-Z]+$/.test(code)) {
    return false;
  }
  const frames = String(error.stack).split("\n").filter((line) => /^\s+at /.test(line));
  return frames.length > 0 && frames.every((line) => line.includes("ext:deno_node/"));
}

/**
 * Keeps those errors from ending the process; every other uncaught error still does.
 *
 * The driver schedules its writes with `setImmediate`, so the error is caught inside the
 * immediate that throws it. Letting it escape is not enough to survive even when the "error"
 * event is then cancelled: Deno 2.9.6's immediate queue resumes a batch after a throw from the
 * immediate that followed, and if that one was cleared meanwhile (the driver clears its pending
 * write when the connection closes) it dies on `Cannot read properties of undefined (reading
 * '_idleNext')`, which ended a server in the PostgreSQL-restart campaign. The "error" listener
 * stays for the driver's other timers, and an "unhandledrejection" one takes the socket errors
 * above.
 */
function guardDriverErrors(): void {
  if (guarded) return;
  guarded = true;
  const schedule = globalThis.setImmediate;
  globalThis.setImmediate =
    ((callback: (...args: unknown[]) => void, ...args: unknown[]) =>
      schedule((...given: unknown[]) => {
        try {
          callback(...given);
        } catch (error) {
          if (!isWriteAfterClose(error)) throw error;
        }
      }, ...args)) as typeof setImmediate;
  globalThis.addEventListener("error", (event) => {
    if (isWriteAfterClose((event as ErrorEvent).error)) event.preventDefault();
  });
  globalThis.addEventListener("unhandledrejection", (event) => {
    if (isLeftSocketError(event.reason)) event.preventDefault();
  });
}

/** What the driver gets for TLS: its `ssl` option, and the URL without what only tegami reads. */
export interface TlsChoice {
  /** The URL to hand the driver. */
  url: string;
  /** The driver's `ssl` option, or undefined to let it read `sslmode` from the URL. */
  ssl: Options<Record<string, never>>["ssl"] | undefined;
}

/**
 * Reads `sslmode` and `sslrootcert` from `url`, as libpq does. `sslrootcert=PATH` names a PEM
 * file of CA certificates to trust instead of the system's (a managed database's CA bundle, a
 * private CA); it is read here, once, and taken out of the URL, since the driver would send it
 * to the server as a setting. `verify-full` checks the chain and that the certificate names the
 * host; `verify-ca` only the chain; `require` encrypts without checking (libpq's meaning).
 */
export function tlsChoice(url: string): TlsChoice {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url, ssl: undefined };
  }
  const problem = postgresUrlProblem(url);
  if (problem !== null) throw new Error(`Cannot use the PostgreSQL URL: ${problem}`);
  const root = parsed.searchParams.get("sslrootcert");
  if (root === null || root === "system") return { url, ssl: undefined };
  const mode = parsed.searchParams.get("sslmode") ?? "verify-full";
  let ca: string;
  try {
    ca = Deno.readTextFileSync(root);
  } catch (error) {
    throw new Error(`Cannot read sslrootcert ${root}: ${(error as Error).message}`);
  }
  parsed.searchParams.delete("sslrootcert");
  parsed.searchParams.delete("sslmode");
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  return {
    url: parsed.href,
    ssl: {
      ca,
      rejectUnauthorized: true,
      // The driver names no server for an IP address; the check needs the host either way.
      checkServerIdentity: mode === "verify-full"
        ? (_name: string, cert: tls.PeerCertificate) => tls.checkServerIdentity(host, cert)
        : () => undefined,
    },
  };
}

/**
 * Opens a pool on `url` (nothing connects until the first query). Throws a one-line `Error`
 * when the URL's TLS settings cannot be honoured (see {@linkcode tlsChoice}).
 */
export function connectPg(url: string, options: PgConnectOptions): Sql {
  guardDriverErrors();
  const tlsOptions = tlsChoice(url);
  return postgres(tlsOptions.url, {
    ...(tlsOptions.ssl === undefined ? {} : { ssl: tlsOptions.ssl }),
    max: options.max,
    connect_timeout: options.connectTimeoutS ?? 5,
    // NOTICEs ("schema already exists, skipping") are not for the log.
    onnotice: () => {},
    connection: {
      application_name: options.applicationName ?? "tegami",
      search_path: `"${options.schema}"`,
      // Each statement is planned for the table as it is now. A plan kept from the first runs
      // (the table empty, at startup) would go on reading the whole table once it has grown,
      // until autovacuum's next ANALYZE; planning these short statements costs little.
      plan_cache_mode: "force_custom_plan",
      // Every statement here is short; compiling one (which the cost the claim's disabled sort
      // reports would trigger, see pg_store.ts inIndexOrder) takes longer than running it.
      jit: "off",
      ...options.settings,
    },
    // Ids, times and counts are bigint columns; every value tegami keeps fits a double exactly.
    types: {
      bigint: {
        to: 20,
        from: [20],
        serialize: (value: number) => String(value),
        parse: (value: string) => Number(value),
      },
    },
  });
}

/** SQLSTATE codes after which the whole transaction may simply run again. */
const RETRYABLE = new Set(["40001", "40P01"]); // serialization failure, deadlock detected

/** True when `error` is a conflict that running the transaction again resolves. */
export function isRetryable(error: unknown): boolean {
  return error instanceof postgres.PostgresError && RETRYABLE.has(error.code);
}

/** The driver's error in one line, without anything secret (the URL never appears in it). */
export function describePgError(error: unknown): string {
  if (error instanceof postgres.PostgresError) return `${error.code} ${error.message}`;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === "string" && !error.message.includes(code)
      ? `${code} ${error.message}`
      : error.message;
  }
  return String(error);
}

/**
 * Why connecting to `url` failed, in one line. The driver answers a server that refuses TLS
 * under `sslmode=require` by starting the handshake anyway, so the server closes the socket and
 * all the driver says is ECONNRESET; this names the real cause instead.
 */
export function describeConnectError(url: string, error: unknown): string {
  let sslmode: string | null = null;
  try {
    sslmode = new URL(url).searchParams.get("sslmode");
  } catch {
    // not a URL the driver would have accepted either
  }
  const text = describePgError(error);
  if (
    sslmode !== null && /^(require|verify-ca|verify-full)$/.test(sslmode) &&
    /ECONNRESET/.test(text) && /TLS/.test(text)
  ) {
    return `the server does not accept TLS connections, which sslmode=${sslmode} demands ` +
      "(it closed the connection at the TLS handshake)";
  }
  return text;
}

/** `error` as the store reports it: a `TegamiError` unchanged, anything else `unavailable`. */
export function asStoreError(error: unknown, action: string): TegamiError {
  if (error instanceof TegamiError) return error;
  return new TegamiError(
    "unavailable",
    `Cannot ${action}: the database is unreachable or refused it (${
      describePgError(error)
    }); retry later`,
    { cause: error },
  );
}

/**
 * `work`, or a rejection with `unavailable` when it has not settled within `ms`. A guard, not a
 * cancel: the driver can wait for ever on a peer that closes a connection as soon as it is
 * accepted, and no caller may wait with it.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, action: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new TegamiError(
            "unavailable",
            `Cannot ${action}: the database did not answer within ${ms} ms; retry later`,
          ),
        ),
      ms,
    );
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
