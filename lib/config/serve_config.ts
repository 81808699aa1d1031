/**
 * The settings of `tegami serve`: its flag table ({@linkcode SERVE_FLAGS}), the type resolved
 * from it ({@linkcode ServeConfig}), and the checks that span several flags.
 *
 * To add a flag: add one row to the table (its key is the setting's name, with a doc comment);
 * the parser, the env var, the help text and the type follow. A check across flags goes in
 * {@linkcode resolveServeConfig}.
 *
 * @module
 */

import { MAX_LEASE_MS, MIN_LEASE_MS } from "../core/limits.ts";
import { isPostgresUrl, postgresUrlProblem } from "../store/postgres/pg_url.ts";
import { DEFAULT_PAGE_SIZE } from "../store/sqlite/sqlite_store.ts";
import {
  ConfigError,
  flag,
  type FlagValues,
  invalidFlag,
  resolveFlags,
  showValue,
} from "./flags.ts";

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** `scheme://host[:port]` as browsers send it in `Origin`, or `null` if `text` is not one. */
function normalizeOrigin(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  const bare = url.pathname === "/" && url.search === "" && url.hash === "" &&
    url.username === "" && url.password === "";
  return (url.protocol === "http:" || url.protocol === "https:") && bare ? url.origin : null;
}

/** The allowed origins: `*` alone, or each one normalized to `scheme://host[:port]`. */
function allowedOrigins(
  items: string[],
  fail: (detail: string) => never,
  text: string,
): string[] | "*" {
  if (items.includes("*")) {
    if (items.length > 1) fail(`"*" must stand alone, got "${text}"`);
    return "*";
  }
  return items.map((origin) =>
    normalizeOrigin(origin) ??
      fail(`expected origins like https://example.com, got "${origin}"`)
  );
}

/** Every flag of `tegami serve`, in help order, by the setting it resolves to. */
export const SERVE_FLAGS = {
  /** SQLite file path, or a `postgres://` / `postgresql://` URL. */
  db: flag.string("db", "tegami.db", "path to the SQLite file, or postgres://… URL", {
    placeholder: "PATH|URL",
  }),
  /** The PostgreSQL schema holding tegami's tables. */
  pgSchema: flag.string(
    "pg-schema",
    "tegami",
    "PostgreSQL schema for tegami's tables (created if missing)",
    { placeholder: "NAME" },
  ),
  /** Most PostgreSQL connections per server. */
  pgPool: flag.int("pg-pool", 10, "most PostgreSQL connections per server (plus one for LISTEN)", {
    min: 1,
    max: 1000,
  }),
  /** How often, in ms, a PostgreSQL-backed server looks for work a lost notification hid. */
  pgPollMs: flag.duration(
    "pg-poll",
    SECOND,
    "on PostgreSQL, how often to look for work a lost notification hid",
    { min: 50, max: MINUTE },
  ),
  /** Interface to listen on. */
  host: flag.string("host", "127.0.0.1", "interface to listen on", { placeholder: "HOST" }),
  /** Port to listen on; 0 picks any free port. */
  port: flag.int("port", 7700, "port to listen on; 0 picks any free port", { min: 0, max: 65535 }),
  /** JSON tokens file; `null` turns auth off. */
  tokensFile: flag.optionalString(
    "tokens",
    "JSON tokens file; without one, anyone may call the API",
    { placeholder: "FILE" },
  ),
  /** The directory backups are written into; null: the database's own. */
  backupDir: flag.optionalString(
    "backup-dir",
    "directory tegami backup may write into (a FILE given to it is taken inside it); default: " +
      "the database's directory",
    { placeholder: "DIR" },
  ),
  /** SQLite `synchronous` mode. */
  sync: flag.choice(
    "sync",
    ["full", "normal"],
    "full",
    "SQLite: full fsyncs every commit; normal skips the fsync (faster) but may lose the last commits on power loss (PostgreSQL: its synchronous_commit decides)",
  ),
  /** SQLite: the page size, in bytes, of a database file the server creates (a power of two). */
  pageSize: flag.size(
    "page-size",
    DEFAULT_PAGE_SIZE,
    "SQLite: page size (a power of two) of a database file it creates; 1KiB writes 40 % fewer bytes per job but slows batch enqueues",
    { min: 512, max: 64 * KiB },
  ),
  /** Largest job payload in bytes (its JSON text); never above {@linkcode ServeConfig.maxBody}. */
  maxPayload: flag.size("max-payload", MiB, "largest job payload, measured as its JSON text", {
    min: 1,
    max: GiB,
  }),
  /** Largest HTTP request body in bytes. */
  maxBody: flag.size("max-body", 16 * MiB, "largest HTTP request body", { min: KiB, max: GiB }),
  /** Most jobs in one batch enqueue. */
  maxBatch: flag.int("max-batch", 1000, "most jobs in one batch enqueue", { min: 1, max: 100_000 }),
  /** How long done and cancelled jobs are kept, in ms. */
  retainDoneMs: flag.duration(
    "retain-done",
    DAY,
    "how long done and cancelled jobs (and their keys) are kept; 0: an ack deletes its job",
    { min: 0, max: 365 * DAY },
  ),
  /** Server default lease length in ms. */
  leaseMs: flag.duration(
    "lease",
    30 * SECOND,
    "lease length when neither consumer nor job sets one",
    { min: MIN_LEASE_MS, max: MAX_LEASE_MS },
  ),
  /** First retry delay in ms; never above {@linkcode ServeConfig.backoffMaxMs}. */
  backoffBaseMs: flag.duration(
    "backoff-base",
    SECOND,
    "delay before the first retry (50–100 % of it, at random); doubles each attempt",
    { min: 1, max: DAY },
  ),
  /** Longest retry delay in ms. */
  backoffMaxMs: flag.duration("backoff-max", HOUR, "longest delay between retries", {
    min: 1,
    max: 30 * DAY,
  }),
  /** Most open connections, HTTP and WebSocket (lowered to fit the descriptor limit). */
  maxConnections: flag.int(
    "max-connections",
    10_000,
    "most open connections, HTTP and WebSocket (capped by the descriptor limit; past it, 503)",
    { min: 1, max: 1_000_000 },
  ),
  /**
   * `on`: tegami's own accept loop (connection limit, timeouts, relay to a private server);
   * `off`: `Deno.serve` directly, for a reverse proxy that enforces limits and timeouts itself.
   */
  frontDoor: flag.choice(
    "front-door",
    ["on", "off"],
    "on",
    "on counts and times every connection; off serves directly (behind a proxy that does)",
  ),
  /** Time a new connection has to send its first complete request head, in ms. */
  headerTimeoutMs: flag.duration(
    "header-timeout",
    10 * SECOND,
    "time a new connection has to send its first complete request head",
    { min: 100, max: HOUR },
  ),
  /**
   * Time a kept-alive HTTP connection may wait for its next request head, and an answer for the
   * client to take its next bytes, in ms.
   */
  idleTimeoutMs: flag.duration(
    "idle-timeout",
    30 * SECOND,
    "time a kept-alive HTTP connection may wait for its next request head, or an answer " +
      "for the client to read it",
    { min: 100, max: HOUR },
  ),
  /** Time a request body has to arrive in full, in ms. */
  bodyTimeoutMs: flag.duration(
    "body-timeout",
    30 * SECOND,
    "time a request body has to arrive in full (past it, 408)",
    { min: 100, max: HOUR },
  ),
  /** Time a WebSocket has, with auth on, to send its `auth` frame when the upgrade had no token. */
  authTimeoutMs: flag.duration(
    "auth-timeout",
    10 * SECOND,
    "time a WebSocket without a token has to send its auth frame (then close 1008)",
    { min: 100, max: HOUR },
  ),
  /** Request body bytes held at once across all requests. */
  bodyBudget: flag.size(
    "body-budget",
    64 * MiB,
    "request body bytes held at once across all requests (past it, 503)",
    { min: KiB, max: 64 * GiB },
  ),
  /** Time requests in flight get at shutdown before their connections are cut, in ms. */
  shutdownGraceMs: flag.duration(
    "shutdown-grace",
    10 * SECOND,
    "time requests in flight get to finish at shutdown before their connections are cut",
    { min: 0, max: 10 * MINUTE },
  ),
  /** Most distinct queues. */
  maxQueues: flag.int(
    "max-queues",
    10_000,
    "most distinct queues (on PostgreSQL as last counted); making a new queue past it answers 409",
    { min: 1, max: 10_000_000 },
  ),
  /** Most schedules (recurring jobs). */
  maxSchedules: flag.int(
    "max-schedules",
    10_000,
    "most schedules (recurring jobs); creating one more answers 409 (replacing one never does)",
    { min: 1, max: 10_000_000 },
  ),
  /** Queues given their own series in `/metrics`: the busiest; all are in the totals. */
  metricsQueues: flag.int(
    "metrics-queues",
    100,
    "queues shown one by one in /metrics and the dashboard (the busiest; all in the totals)",
    { min: 0, max: 100_000 },
  ),
  /** Lower-case host names accepted in `Host` when auth is off, besides localhost and IPs. */
  allowedHosts: flag.list(
    "allowed-hosts",
    "host names accepted in the Host header when auth is off, besides localhost and IP addresses",
    (items) => items.map((h) => h.toLowerCase()),
    { placeholder: "HOSTS" },
  ),
  /** Normalized origins (`scheme://host[:port]`) allowed besides the same origin, or `"*"`. */
  allowedOrigins: flag.list(
    "allowed-origins",
    "browser origins allowed besides the same origin, comma separated, or * for any",
    allowedOrigins,
    { placeholder: "ORIGINS" },
  ),
  /** Allow a non-loopback bind without tokens. */
  insecure: flag.bool("insecure", "allow listening beyond loopback without --tokens"),
  /** Least severe log entry written. */
  logLevel: flag.choice(
    "log-level",
    ["debug", "info", "warn", "error"],
    "info",
    "least severe log entry written",
    { placeholder: "LEVEL" },
  ),
  /** Log line format. */
  logFormat: flag.choice(
    "log-format",
    ["pretty", "json"],
    "pretty",
    "pretty for people, json for log collectors",
  ),
  /** TLS certificate file; set exactly when {@linkcode ServeConfig.tlsKey} is. */
  tlsCert: flag.optionalString("tls-cert", "TLS certificate chain (PEM); needs --tls-key", {
    placeholder: "FILE",
  }),
  /** TLS private key file; set exactly when {@linkcode ServeConfig.tlsCert} is. */
  tlsKey: flag.optionalString("tls-key", "TLS private key (PEM); needs --tls-cert", {
    placeholder: "FILE",
  }),
  /** WebSocket ping interval in ms. */
  pingIntervalMs: flag.duration(
    "ping-interval",
    10 * SECOND,
    "WebSocket ping interval; two unanswered pings close the connection",
    { min: 10, max: HOUR },
  ),
  /** Whether the Amazon SQS API answers on the server's port (`POST /`, `POST /ACCOUNT/QUEUE`). */
  sqs: flag.choice(
    "sqs",
    ["on", "off"],
    "on",
    "on answers the Amazon SQS API (JSON and query protocols) on the same port; see docs/sqs.md",
  ),
  /** The account id in SQS queue URLs and ARNs: 12 digits. */
  sqsAccount: flag.string(
    "sqs-account",
    "000000000000",
    "account id (12 digits) in SQS queue URLs (/ACCOUNT/QUEUE) and ARNs",
    { placeholder: "ID" },
  ),
  /** The region in SQS queue ARNs. */
  sqsRegion: flag.string("sqs-region", "us-east-1", "region in SQS queue ARNs", {
    placeholder: "REGION",
  }),
};

/** The settings of `tegami serve`, validated; sizes in bytes, durations in ms. */
export type ServeConfig = FlagValues<typeof SERVE_FLAGS>;

/** Whether `host` can only be reached from this machine. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  return bare === "localhost" || bare === "::1" || bare === "0:0:0:0:0:0:0:1" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/**
 * Resolves the settings of `tegami serve` from its arguments (without the `serve` word) and the
 * environment: a flag beats its env var, which beats the default. `--help` is not handled here;
 * check `wantsHelp` first.
 *
 * @throws {ConfigError} for an unknown flag, a positional argument, or an invalid value; the
 * message names the flag and its env var.
 */
export function resolveServeConfig(
  args: string[],
  env: Record<string, string | undefined>,
): ServeConfig {
  const { values, texts, positionals } = resolveFlags(SERVE_FLAGS, args, env, "tegami serve");
  if (positionals.length > 0) {
    // `deno task start -- --db x` (the npm habit) passes the "--" on, and it ends the flags.
    const hint = args.includes("--") && positionals[0].startsWith("-")
      ? ` (it comes after "--", which ends the flags: leave the "--" out)`
      : "";
    throw new ConfigError(
      "",
      `Unexpected argument "${positionals[0]}": tegami serve takes only flags${hint}`,
    );
  }

  // A pair out of order is blamed on whichever side the user set, so the message quotes their text.
  const ordered = (
    low: "maxPayload" | "backoffBaseMs",
    high: "maxBody" | "backoffMaxMs",
  ) => {
    if (values[low] <= values[high]) return;
    const lowSpec = SERVE_FLAGS[low], highSpec = SERVE_FLAGS[high];
    if (texts[low] !== null) {
      throw invalidFlag(
        lowSpec,
        `must not exceed --${highSpec.name} (${showValue(highSpec, values[high])}), ` +
          `got "${texts[low]}"`,
      );
    }
    throw invalidFlag(
      highSpec,
      `must be at least --${lowSpec.name} (${showValue(lowSpec, values[low])}), ` +
        `got "${texts[high]}"`,
    );
  };
  ordered("maxPayload", "maxBody");
  ordered("backoffBaseMs", "backoffMaxMs");

  if ((values.pageSize & (values.pageSize - 1)) !== 0) {
    throw invalidFlag(SERVE_FLAGS.pageSize, `must be a power of two, got "${texts.pageSize}"`);
  }

  if (values.tlsCert !== null && values.tlsKey === null) {
    throw invalidFlag(SERVE_FLAGS.tlsKey, "missing; --tls-cert needs it");
  }
  if (values.tlsKey !== null && values.tlsCert === null) {
    throw invalidFlag(SERVE_FLAGS.tlsCert, "missing; --tls-key needs it");
  }

  if (isPostgresUrl(values.db)) {
    const problem = postgresUrlProblem(values.db);
    if (problem !== null) throw invalidFlag(SERVE_FLAGS.db, problem);
  }

  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(values.pgSchema)) {
    throw invalidFlag(
      SERVE_FLAGS.pgSchema,
      `expected a plain identifier (letters, digits, _; at most 63), got "${values.pgSchema}"`,
    );
  }

  if (!/^[0-9]{12}$/.test(values.sqsAccount)) {
    throw invalidFlag(SERVE_FLAGS.sqsAccount, `expected 12 digits, got "${values.sqsAccount}"`);
  }
  if (!/^[a-z0-9-]{1,32}$/.test(values.sqsRegion)) {
    throw invalidFlag(
      SERVE_FLAGS.sqsRegion,
      `expected a region name such as us-east-1, got "${values.sqsRegion}"`,
    );
  }

  if (!isLoopbackHost(values.host) && values.tokensFile === null && !values.insecure) {
    throw invalidFlag(
      SERVE_FLAGS.host,
      `listening on "${values.host}" without --tokens opens every queue to anyone; ` +
        "give --tokens FILE, or --insecure to allow it",
    );
  }
  return values;
}
