import assert from "node:assert/strict";
import {
  CLIENT_FLAGS as CLIENT_TABLE,
  resolveClientConfig,
} from "../../lib/config/client_config.ts";
import { ConfigError, wantsHelp } from "../../lib/config/flags.ts";
import { serveHelp, topLevelHelp } from "../../lib/config/help.ts";
import {
  isLoopbackHost,
  resolveServeConfig,
  SERVE_FLAGS as SERVE_TABLE,
  type ServeConfig,
} from "../../lib/config/serve_config.ts";

const SERVE_FLAGS = Object.values(SERVE_TABLE);
const CLIENT_FLAGS = Object.values(CLIENT_TABLE);
import { formatDuration, formatSize, parseDuration, parseSize } from "../../lib/config/units.ts";

/** Asserts that `fn` throws a ConfigError about `field` whose message matches `pattern`. */
function assertConfigError(fn: () => unknown, field: string, pattern?: RegExp): ConfigError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof ConfigError, `expected a ConfigError, got ${caught}`);
  assert.equal(caught.field, field, caught.message);
  if (pattern !== undefined) assert.match(caught.message, pattern);
  return caught;
}

Deno.test("parseSize() reads bytes and every unit", () => {
  const cases: [string, number][] = [
    ["0", 0],
    ["4096", 4096],
    ["4096B", 4096],
    ["512KiB", 512 * 1024],
    ["1MiB", 1024 ** 2],
    ["2GiB", 2 * 1024 ** 3],
    ["10KB", 10_000],
    ["1MB", 1_000_000],
    ["3GB", 3_000_000_000],
    ["1mib", 1024 ** 2],
    ["1MIB", 1024 ** 2],
    ["64 kib", 64 * 1024],
    ["  1MiB\n", 1024 ** 2],
    ["1.5KiB", 1536],
    ["1.1KB", 1100],
    ["0.5MiB", 512 * 1024],
  ];
  for (const [text, bytes] of cases) assert.equal(parseSize(text), bytes, text);
});

Deno.test("parseSize() rejects negative, fractional and malformed sizes", () => {
  for (const text of ["", " ", "-1", "-1KiB", "0.5B", "1.5", "1.0001KiB", "abc", "1TiB", "KiB"]) {
    assert.throws(() => parseSize(text), /^Error: Cannot parse size/, text);
  }
  for (const text of ["1e3", "0x10", "1,5KiB", "1.KiB", ".5KiB", "1KiB2", "99999999999GiB"]) {
    assert.throws(() => parseSize(text), /Cannot parse size/, text);
  }
});

Deno.test("parseDuration() reads milliseconds and every unit", () => {
  const cases: [string, number][] = [
    ["0", 0],
    ["250", 250],
    ["500ms", 500],
    ["30s", 30_000],
    ["5m", 300_000],
    ["24h", 86_400_000],
    ["1d", 86_400_000],
    ["1.5s", 1500],
    ["0.25h", 900_000],
    ["30S", 30_000],
    ["500MS", 500],
    [" 5m ", 300_000],
  ];
  for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
});

Deno.test("parseDuration() rejects negative, fractional and malformed durations", () => {
  for (const text of ["", "-1s", "1.5", "0.5ms", "1.0005s", "5x", "s", "1w", "1h30m", "abc"]) {
    assert.throws(() => parseDuration(text), /^Error: Cannot parse duration/, text);
  }
});

Deno.test("formatSize() picks the largest exact unit, and parses back", () => {
  assert.equal(formatSize(1048576), "1MiB");
  assert.equal(formatSize(16 * 1048576), "16MiB");
  assert.equal(formatSize(512 * 1024), "512KiB");
  assert.equal(formatSize(1024 ** 3), "1GiB");
  assert.equal(formatSize(1000), "1KB");
  assert.equal(formatSize(1500), "1500B");
  assert.equal(formatSize(0), "0B");
  for (const bytes of [0, 1, 1000, 1024, 1536, 2_000_000, 3 * 1024 ** 3]) {
    assert.equal(parseSize(formatSize(bytes)), bytes);
  }
});

Deno.test("formatDuration() picks the largest exact unit, and parses back", () => {
  assert.equal(formatDuration(30_000), "30s");
  assert.equal(formatDuration(86_400_000), "24h");
  assert.equal(formatDuration(7 * 86_400_000), "7d");
  assert.equal(formatDuration(3_600_000), "1h");
  assert.equal(formatDuration(300_000), "5m");
  assert.equal(formatDuration(1500), "1500ms");
  assert.equal(formatDuration(0), "0ms");
  for (const ms of [0, 1, 999, 1000, 90_000, 86_400_000, 2 * 86_400_000]) {
    assert.equal(parseDuration(formatDuration(ms)), ms);
  }
});

Deno.test("resolveServeConfig() refuses a --pg-schema that is not a plain identifier", () => {
  assert.throws(
    () => resolveServeConfig(["--pg-schema", "a-b"], {}),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /--pg-schema/);
      assert.match(error.message, /plain identifier/);
      return true;
    },
  );
  assert.equal(resolveServeConfig(["--pg-schema", "jobs_2"], {}).pgSchema, "jobs_2");
});

Deno.test("resolveServeConfig() fills every default", () => {
  const expected: ServeConfig = {
    db: "tegami.db",
    pgSchema: "tegami",
    pgPool: 10,
    pgPollMs: 1000,
    host: "127.0.0.1",
    port: 7700,
    tokensFile: null,
    backupDir: null,
    sync: "full",
    pageSize: 4096,
    maxPayload: 1024 * 1024,
    maxBody: 16 * 1024 * 1024,
    maxBatch: 1000,
    retainDoneMs: 24 * 3_600_000,
    leaseMs: 30_000,
    backoffBaseMs: 1000,
    backoffMaxMs: 3_600_000,
    maxConnections: 10_000,
    frontDoor: "on",
    headerTimeoutMs: 10_000,
    idleTimeoutMs: 30_000,
    bodyTimeoutMs: 30_000,
    authTimeoutMs: 10_000,
    bodyBudget: 64 * 1024 * 1024,
    shutdownGraceMs: 10_000,
    maxQueues: 10_000,
    maxSchedules: 10_000,
    metricsQueues: 100,
    allowedHosts: [],
    allowedOrigins: [],
    insecure: false,
    logLevel: "info",
    logFormat: "pretty",
    tlsCert: null,
    tlsKey: null,
    pingIntervalMs: 10_000,
    sqs: "on",
    sqsAccount: "000000000000",
    sqsRegion: "us-east-1",
  };
  assert.deepEqual(resolveServeConfig([], {}), expected);
});

Deno.test("resolveServeConfig() prefers a flag over its env var", () => {
  const config = resolveServeConfig(["--port", "8080", "--sync=normal"], {
    TEGAMI_PORT: "9090",
    TEGAMI_SYNC: "full",
  });
  assert.equal(config.port, 8080);
  assert.equal(config.sync, "normal");
});

Deno.test("resolveServeConfig() prefers an env var over the default", () => {
  const config = resolveServeConfig([], {
    TEGAMI_PORT: "9090",
    TEGAMI_DB: "/var/lib/tegami/jobs.db",
    TEGAMI_MAX_PAYLOAD: "64KiB",
    TEGAMI_LEASE: "1m",
    TEGAMI_LOG_LEVEL: "debug",
  });
  assert.equal(config.port, 9090);
  assert.equal(config.db, "/var/lib/tegami/jobs.db");
  assert.equal(config.maxPayload, 64 * 1024);
  assert.equal(config.leaseMs, 60_000);
  assert.equal(config.logLevel, "debug");
});

Deno.test("resolveServeConfig() reads every flag from its env var", () => {
  const env: Record<string, string> = {
    TEGAMI_DB: "/tmp/x.db",
    TEGAMI_PG_SCHEMA: "queue_jobs",
    TEGAMI_PG_POOL: "3",
    TEGAMI_PG_POLL: "250ms",
    TEGAMI_HOST: "0.0.0.0",
    TEGAMI_PORT: "0",
    TEGAMI_TOKENS: "tokens.json",
    TEGAMI_BACKUP_DIR: "/var/backups/tegami",
    TEGAMI_SYNC: "normal",
    TEGAMI_MAX_PAYLOAD: "2MiB",
    TEGAMI_MAX_BODY: "4MB",
    TEGAMI_MAX_BATCH: "10",
    TEGAMI_RETAIN_DONE: "1d",
    TEGAMI_LEASE: "100ms",
    TEGAMI_BACKOFF_BASE: "250",
    TEGAMI_BACKOFF_MAX: "5m",
    TEGAMI_MAX_CONNECTIONS: "50",
    TEGAMI_FRONT_DOOR: "off",
    TEGAMI_HEADER_TIMEOUT: "1s",
    TEGAMI_IDLE_TIMEOUT: "2s",
    TEGAMI_BODY_TIMEOUT: "3s",
    TEGAMI_AUTH_TIMEOUT: "5s",
    TEGAMI_BODY_BUDGET: "1MiB",
    TEGAMI_SHUTDOWN_GRACE: "4s",
    TEGAMI_MAX_QUEUES: "7",
    TEGAMI_MAX_SCHEDULES: "8",
    TEGAMI_METRICS_QUEUES: "5",
    TEGAMI_ALLOWED_HOSTS: "Queue.Example,b.example",
    TEGAMI_ALLOWED_ORIGINS: "https://a.example",
    TEGAMI_INSECURE: "yes",
    TEGAMI_LOG_LEVEL: "error",
    TEGAMI_LOG_FORMAT: "json",
    TEGAMI_TLS_CERT: "cert.pem",
    TEGAMI_TLS_KEY: "key.pem",
    TEGAMI_PING_INTERVAL: "2s",
    TEGAMI_PAGE_SIZE: "2KiB",
    TEGAMI_SQS: "off",
    TEGAMI_SQS_ACCOUNT: "123456789012",
    TEGAMI_SQS_REGION: "eu-west-3",
  };
  assert.deepEqual(Object.keys(env).sort(), SERVE_FLAGS.map((s) => s.env).sort());
  assert.deepEqual(resolveServeConfig([], env), {
    db: "/tmp/x.db",
    pgSchema: "queue_jobs",
    pgPool: 3,
    pgPollMs: 250,
    host: "0.0.0.0",
    port: 0,
    tokensFile: "tokens.json",
    backupDir: "/var/backups/tegami",
    sync: "normal",
    pageSize: 2048,
    maxPayload: 2 * 1024 * 1024,
    maxBody: 4_000_000,
    maxBatch: 10,
    retainDoneMs: 86_400_000,
    leaseMs: 100,
    backoffBaseMs: 250,
    backoffMaxMs: 300_000,
    maxConnections: 50,
    frontDoor: "off",
    headerTimeoutMs: 1000,
    idleTimeoutMs: 2000,
    bodyTimeoutMs: 3000,
    authTimeoutMs: 5000,
    bodyBudget: 1024 * 1024,
    shutdownGraceMs: 4000,
    maxQueues: 7,
    maxSchedules: 8,
    metricsQueues: 5,
    allowedHosts: ["queue.example", "b.example"],
    allowedOrigins: ["https://a.example"],
    insecure: true,
    logLevel: "error",
    logFormat: "json",
    tlsCert: "cert.pem",
    tlsKey: "key.pem",
    pingIntervalMs: 2000,
    sqs: "off",
    sqsAccount: "123456789012",
    sqsRegion: "eu-west-3",
  });
});

Deno.test("resolveServeConfig() treats a blank env var as unset", () => {
  const config = resolveServeConfig([], { TEGAMI_TOKENS: "", TEGAMI_PORT: "  " });
  assert.equal(config.tokensFile, null);
  assert.equal(config.port, 7700);
});

Deno.test("resolveServeConfig() takes the last of a repeated flag", () => {
  assert.equal(resolveServeConfig(["--port", "1", "--port", "2"], {}).port, 2);
});

Deno.test("resolveServeConfig() reads every size and duration form", () => {
  const sizes: [string, number][] = [
    ["4096", 4096],
    ["512KiB", 512 * 1024],
    ["1MiB", 1024 ** 2],
    ["1GiB", 1024 ** 3],
    ["100KB", 100_000],
    ["1MB", 1_000_000],
    ["1GB", 1_000_000_000],
    ["2048B", 2048],
  ];
  for (const [text, bytes] of sizes) {
    const config = resolveServeConfig(["--max-payload", text, "--max-body", "1GiB"], {});
    assert.equal(config.maxPayload, bytes, text);
  }
  const durations: [string, number][] = [
    ["500ms", 500],
    ["30s", 30_000],
    ["5m", 300_000],
    ["12h", 12 * 3_600_000],
    ["1.5s", 1500],
    ["2000", 2000],
  ];
  for (const [text, ms] of durations) {
    assert.equal(resolveServeConfig(["--lease", text], {}).leaseMs, ms, text);
  }
  assert.equal(resolveServeConfig(["--retain-done", "7d"], {}).retainDoneMs, 7 * 86_400_000);
  assert.equal(resolveServeConfig(["--retain-done", "0"], {}).retainDoneMs, 0);
});

Deno.test("resolveServeConfig() rejects a malformed value of every flag, naming it and its env var", () => {
  const bad: Record<string, string> = {
    string: "",
    int: "abc",
    size: "lots",
    duration: "soon",
    enum: "sometimes",
  };
  for (const spec of SERVE_FLAGS) {
    const text = bad[spec.kind];
    if (text === undefined) continue;
    const label = `Invalid --${spec.name} (${spec.env}): expected `;
    const fromFlag = assertConfigError(
      () => resolveServeConfig([`--${spec.name}=${text}`], {}),
      spec.name,
    );
    assert.ok(fromFlag.message.startsWith(label), fromFlag.message);
    assert.ok(fromFlag.message.endsWith(`got "${text}"`), fromFlag.message);
    if (text !== "") {
      const fromEnv = assertConfigError(
        () => resolveServeConfig([], { [spec.env]: text }),
        spec.name,
      );
      assert.ok(fromEnv.message.startsWith(label), fromEnv.message);
    }
  }
});

Deno.test("resolveServeConfig() rejects a value out of every flag's range", () => {
  for (const spec of SERVE_FLAGS) {
    if (spec.min === undefined || spec.max === undefined) continue;
    for (const n of [spec.min - 1, spec.max + 1]) {
      if (n < 0) continue;
      // Plain numbers are bytes or ms, so this works for ints, sizes and durations alike.
      assertConfigError(
        () => resolveServeConfig([`--${spec.name}`, String(n)], { TEGAMI_MAX_BODY: "1GiB" }),
        spec.name,
        new RegExp(`^Invalid --${spec.name} \\(${spec.env}\\): expected .* from `),
      );
    }
  }
});

Deno.test("resolveServeConfig() gives the expected port error message", () => {
  const error = assertConfigError(() => resolveServeConfig(["--port", "abc"], {}), "port");
  assert.equal(
    error.message,
    'Invalid --port (TEGAMI_PORT): expected an integer from 0 to 65535, got "abc"',
  );
  assertConfigError(() => resolveServeConfig(["--port", "65536"], {}), "port");
  assertConfigError(() => resolveServeConfig(["--port", "-1"], {}), "port");
  assertConfigError(() => resolveServeConfig(["--port", "80.5"], {}), "port");
  assertConfigError(() => resolveServeConfig([], { TEGAMI_PORT: "http" }), "port", /TEGAMI_PORT/);
});

Deno.test("resolveServeConfig() keeps the lease from 100ms to 12h", () => {
  assert.equal(resolveServeConfig(["--lease", "100ms"], {}).leaseMs, 100);
  assert.equal(resolveServeConfig(["--lease", "12h"], {}).leaseMs, 12 * 3_600_000);
  assertConfigError(() => resolveServeConfig(["--lease", "99ms"], {}), "lease", /100ms to 12h/);
  assertConfigError(() => resolveServeConfig(["--lease", "12.5h"], {}), "lease", /TEGAMI_LEASE/);
});

Deno.test("resolveServeConfig() keeps the batch limit from 1 to 100000", () => {
  assert.equal(resolveServeConfig(["--max-batch", "100000"], {}).maxBatch, 100_000);
  assertConfigError(() => resolveServeConfig(["--max-batch", "0"], {}), "max-batch");
  assertConfigError(() => resolveServeConfig(["--max-batch", "100001"], {}), "max-batch");
});

Deno.test("resolveServeConfig() rejects a backoff base above the backoff max", () => {
  assertConfigError(
    () => resolveServeConfig(["--backoff-base", "2h"], {}),
    "backoff-base",
    /^Invalid --backoff-base \(TEGAMI_BACKOFF_BASE\): must not exceed --backoff-max \(1h\), got "2h"$/,
  );
  assertConfigError(
    () => resolveServeConfig([], { TEGAMI_BACKOFF_MAX: "500ms" }),
    "backoff-max",
    /^Invalid --backoff-max \(TEGAMI_BACKOFF_MAX\): must be at least --backoff-base \(1s\)/,
  );
  const equal = resolveServeConfig(["--backoff-base", "5s", "--backoff-max", "5s"], {});
  assert.equal(equal.backoffBaseMs, equal.backoffMaxMs);
});

Deno.test("resolveServeConfig() rejects a payload limit above the body limit", () => {
  assertConfigError(
    () => resolveServeConfig(["--max-payload", "32MiB"], {}),
    "max-payload",
    /must not exceed --max-body \(16MiB\)/,
  );
  assertConfigError(
    () => resolveServeConfig(["--max-body", "512KiB"], {}),
    "max-body",
    /must be at least --max-payload \(1MiB\)/,
  );
});

Deno.test("resolveServeConfig() takes a page size that is a power of two from 512 B to 64 KiB", () => {
  assert.equal(resolveServeConfig(["--page-size", "1KiB"], {}).pageSize, 1024);
  assert.equal(resolveServeConfig([], { TEGAMI_PAGE_SIZE: "65536" }).pageSize, 65536);
  assertConfigError(
    () => resolveServeConfig(["--page-size", "3000"], {}),
    "page-size",
    /^Invalid --page-size \(TEGAMI_PAGE_SIZE\): must be a power of two, got "3000"/,
  );
  for (const text of ["256", "128KiB"]) {
    assertConfigError(() => resolveServeConfig(["--page-size", text], {}), "page-size", /./);
  }
});

Deno.test("resolveServeConfig() refuses a PostgreSQL URL that cannot work, without its password", () => {
  const good =
    "postgres://tegami:secret@db.internal:5432/jobs?sslmode=verify-ca&sslrootcert=/ca.pem";
  assert.equal(resolveServeConfig(["--db", good], {}).db, good);
  assert.equal(
    resolveServeConfig([], { TEGAMI_DB: "postgresql://h/db?sslmode=require" }).db,
    "postgresql://h/db?sslmode=require",
  );
  const refused: [string, RegExp][] = [
    ["postgres://tegami:secret@127.0.0.1:99999/jobs", /: not a valid URL/],
    [
      "postgres://tegami:secret@h/jobs?sslmode=bogus",
      /: sslmode=bogus is not one of disable, allow, prefer, require, verify-ca, verify-full$/,
    ],
    [
      "postgres://tegami:secret@h/jobs?sslmode=require&sslrootcert=/ca.pem",
      /: sslrootcert needs sslmode=verify-full or sslmode=verify-ca \(sslmode=require checks no certificate\)$/,
    ],
  ];
  for (const [url, message] of refused) {
    assertConfigError(() => resolveServeConfig(["--db", url], {}), "db", message);
    try {
      resolveServeConfig(["--db", url], {});
    } catch (error) {
      assert.ok(!(error as Error).message.includes("secret"), "the message shows the password");
    }
  }
  // A SQLite path is not a URL and is not looked at.
  assert.equal(
    resolveServeConfig(["--db", "jobs.db?sslmode=bogus"], {}).db,
    "jobs.db?sslmode=bogus",
  );
});

Deno.test("resolveServeConfig() needs both TLS files or neither", () => {
  assertConfigError(
    () => resolveServeConfig(["--tls-cert", "cert.pem"], {}),
    "tls-key",
    /^Invalid --tls-key \(TEGAMI_TLS_KEY\): missing/,
  );
  assertConfigError(
    () => resolveServeConfig([], { TEGAMI_TLS_KEY: "key.pem" }),
    "tls-cert",
    /^Invalid --tls-cert \(TEGAMI_TLS_CERT\): missing/,
  );
  const config = resolveServeConfig(["--tls-cert", "cert.pem", "--tls-key", "key.pem"], {});
  assert.equal(config.tlsCert, "cert.pem");
  assert.equal(config.tlsKey, "key.pem");
});

Deno.test("resolveServeConfig() refuses a non-loopback host without tokens unless insecure", () => {
  assertConfigError(
    () => resolveServeConfig(["--host", "0.0.0.0"], {}),
    "host",
    /^Invalid --host \(TEGAMI_HOST\): listening on "0.0.0.0" without --tokens/,
  );
  assert.equal(resolveServeConfig(["--host", "0.0.0.0", "--insecure"], {}).insecure, true);
  assert.equal(
    resolveServeConfig(["--host", "0.0.0.0", "--tokens", "t.json"], {}).tokensFile,
    "t.json",
  );
  for (const host of ["localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"]) {
    assert.equal(resolveServeConfig(["--host", host], {}).host, host);
  }
});

Deno.test("isLoopbackHost() knows the loopback names", () => {
  for (const host of ["localhost", "LOCALHOST", "127.0.0.1", "127.255.0.9", "::1", "[::1]"]) {
    assert.equal(isLoopbackHost(host), true, host);
  }
  for (const host of ["0.0.0.0", "::", "192.168.1.2", "example.com", "128.0.0.1", "1270.0.0.1"]) {
    assert.equal(isLoopbackHost(host), false, host);
  }
});

Deno.test("resolveServeConfig() parses booleans from flags and env vars", () => {
  const truthy = ["1", "true", "yes", "TRUE", "Yes", " 1 "];
  const falsy = ["0", "false", "no", "FALSE", "No"];
  for (const text of truthy) {
    assert.equal(resolveServeConfig([], { TEGAMI_INSECURE: text }).insecure, true, text);
  }
  for (const text of falsy) {
    assert.equal(resolveServeConfig([], { TEGAMI_INSECURE: text }).insecure, false, text);
  }
  assert.equal(resolveServeConfig(["--insecure"], {}).insecure, true);
  assert.equal(resolveServeConfig(["--insecure"], { TEGAMI_INSECURE: "0" }).insecure, true);
  assertConfigError(
    () => resolveServeConfig([], { TEGAMI_INSECURE: "maybe" }),
    "insecure",
    /^Invalid --insecure \(TEGAMI_INSECURE\): expected one of 1, 0, true, false, yes, no, got "maybe"$/,
  );
  assertConfigError(
    () => resolveServeConfig(["--insecure=yes"], {}),
    "insecure",
    /^Invalid --insecure \(TEGAMI_INSECURE\): it takes no value/,
  );
});

Deno.test("resolveServeConfig() parses allowed origins as a comma-separated list or *", () => {
  assert.deepEqual(
    resolveServeConfig(["--allowed-origins", "https://a.example, http://b.local:8080/"], {})
      .allowedOrigins,
    ["https://a.example", "http://b.local:8080"],
  );
  assert.deepEqual(
    resolveServeConfig([], { TEGAMI_ALLOWED_ORIGINS: "HTTPS://A.Example:443,," }).allowedOrigins,
    ["https://a.example"],
  );
  assert.equal(resolveServeConfig(["--allowed-origins", "*"], {}).allowedOrigins, "*");
  assert.equal(resolveServeConfig([], { TEGAMI_ALLOWED_ORIGINS: " * " }).allowedOrigins, "*");
  assert.deepEqual(resolveServeConfig(["--allowed-origins", ""], {}).allowedOrigins, []);
  assertConfigError(
    () => resolveServeConfig(["--allowed-origins", "*,https://a.example"], {}),
    "allowed-origins",
    /"\*" must stand alone/,
  );
  for (const origin of ["a.example", "ftp://a.example", "https://a.example/path", "nope"]) {
    assertConfigError(
      () => resolveServeConfig(["--allowed-origins", origin], {}),
      "allowed-origins",
      /^Invalid --allowed-origins \(TEGAMI_ALLOWED_ORIGINS\): expected origins like/,
    );
  }
});

Deno.test("resolveServeConfig() rejects unknown flags, positionals and missing values", () => {
  assertConfigError(
    () => resolveServeConfig(["--prot", "80"], {}),
    "prot",
    /^Unknown flag --prot: see tegami serve --help$/,
  );
  assertConfigError(() => resolveServeConfig(["-p", "80"], {}), "p", /^Unknown flag -p/);
  assertConfigError(
    () => resolveServeConfig(["jobs.db"], {}),
    "",
    /^Unexpected argument "jobs.db"/,
  );
  assertConfigError(
    () => resolveServeConfig(["--port"], {}),
    "port",
    /^Invalid --port \(TEGAMI_PORT\): missing value/,
  );
  assertConfigError(
    () => resolveServeConfig(["--port", "--insecure"], {}),
    "port",
    /missing value/,
  );
  assertConfigError(() => resolveServeConfig(["--help"], {}), "help", /Unknown flag --help/);
});

Deno.test("wantsHelp() finds --help or -h before --", () => {
  assert.equal(wantsHelp(["--help"]), true);
  assert.equal(wantsHelp(["--port", "1", "-h"]), true);
  assert.equal(wantsHelp(["--port", "1"]), false);
  assert.equal(wantsHelp(["--", "--help"]), false);
});

Deno.test("serveHelp() lists every flag with its env var and default", () => {
  const help = serveHelp();
  const lines = help.split("\n");
  for (const spec of SERVE_FLAGS) {
    const at = lines.findIndex((line) => line.startsWith(`  --${spec.name} `));
    assert.ok(at >= 0, `--${spec.name} is missing`);
    const entry = lines.slice(at, at + 4).join(" ");
    assert.ok(entry.includes(spec.description.split(" ")[0]), `--${spec.name} lacks its text`);
    assert.ok(entry.includes(`env ${spec.env}`), `--${spec.name} lacks ${spec.env}`);
    assert.match(entry, /; default \S+/, `--${spec.name} lacks its default`);
  }
  for (
    const text of [
      "default tegami.db",
      "default 127.0.0.1",
      "default 7700",
      "env TEGAMI_TOKENS; default none",
      "default full",
      "default 1MiB",
      "default 16MiB",
      "default 1000",
      "default 24h",
      "default 30s",
      "default 1s",
      "default 1h",
      "default 10000",
      "env TEGAMI_ALLOWED_ORIGINS; default none",
      "default false",
      "default info",
      "default pretty",
      "default 10s",
    ]
  ) {
    assert.ok(help.includes(text), `help lacks "${text}"`);
  }
});

Deno.test("serveHelp() teaches usage, examples and units within 100 columns", () => {
  const help = serveHelp();
  assert.match(help, /^Usage: tegami serve \[flags\]/);
  assert.ok(help.includes("\n  tegami serve\n"));
  assert.ok(
    help.includes(
      "tegami serve --db /var/lib/tegami/jobs.db --port 8080 --tokens tokens.json --host 0.0.0.0",
    ),
  );
  assert.ok(help.includes("TEGAMI_SYNC=normal tegami serve"));
  for (const unit of ["512KiB", "1MiB", "500ms", "30s", "5m", "24h"]) {
    assert.ok(help.includes(unit), unit);
  }
  for (const line of help.split("\n")) assert.ok(line.length <= 100, line);
});

Deno.test("serveHelp() examples are valid configurations", () => {
  assert.equal(resolveServeConfig([], {}).port, 7700);
  const args = "--db /var/lib/tegami/jobs.db --port 8080 --tokens tokens.json --host 0.0.0.0";
  assert.equal(resolveServeConfig(args.split(" "), {}).host, "0.0.0.0");
  assert.equal(resolveServeConfig([], { TEGAMI_SYNC: "normal" }).sync, "normal");
});

Deno.test("SERVE_FLAGS names every env var TEGAMI_ plus the flag in upper snake case", () => {
  for (const spec of [...SERVE_FLAGS, ...CLIENT_FLAGS]) {
    assert.equal(spec.env, `TEGAMI_${spec.name.toUpperCase().replaceAll("-", "_")}`);
  }
  assert.equal(new Set(SERVE_FLAGS.map((s) => s.name)).size, SERVE_FLAGS.length);
});

Deno.test("resolveClientConfig() defaults to the local server without a token", () => {
  const { config, rest, values } = resolveClientConfig(["stats"], {});
  assert.deepEqual(config, { url: "http://127.0.0.1:7700", token: null });
  assert.deepEqual(rest, ["stats"]);
  assert.deepEqual(values, {});
});

Deno.test("resolveClientConfig() prefers a flag over its env var over the default", () => {
  const env = { TEGAMI_URL: "https://queue.example/", TEGAMI_TOKEN: "from-env" };
  assert.deepEqual(resolveClientConfig([], env).config, {
    url: "https://queue.example",
    token: "from-env",
  });
  assert.deepEqual(
    resolveClientConfig(["--url", "http://10.0.0.1:9000", "--token=flag"], env).config,
    { url: "http://10.0.0.1:9000", token: "flag" },
  );
});

Deno.test("resolveClientConfig() returns positionals and the values of extra flags", () => {
  const { config, rest, values } = resolveClientConfig(
    ["enqueue", "emails", "--priority", "5", '{"to":"a@b"}', "--quiet", "--token", "t"],
    {},
    { priority: { type: "string" }, quiet: { type: "boolean" }, delay: { type: "string" } },
  );
  assert.equal(config.token, "t");
  assert.deepEqual(rest, ["enqueue", "emails", '{"to":"a@b"}']);
  assert.deepEqual(values, { priority: "5", quiet: true, delay: undefined });
});

Deno.test("resolveClientConfig() rejects unknown flags, bad URLs and clashing extras", () => {
  assertConfigError(
    () => resolveClientConfig(["--verbose"], {}),
    "verbose",
    /^Unknown flag --verbose: see tegami --help$/,
  );
  assertConfigError(
    () => resolveClientConfig(["--url", "localhost:7700"], {}),
    "url",
    /^Invalid --url \(TEGAMI_URL\): expected an http:\/\/ or https:\/\/ URL, got "localhost:7700"$/,
  );
  assertConfigError(() => resolveClientConfig([], { TEGAMI_URL: "nope" }), "url", /TEGAMI_URL/);
  assertConfigError(() => resolveClientConfig(["--token", ""], {}), "token", /TEGAMI_TOKEN/);
  assert.throws(() => resolveClientConfig([], {}, { url: { type: "string" } }), TypeError);
});

Deno.test("topLevelHelp() lists the commands, the version and the client flags", () => {
  const help = topLevelHelp("1.2.3");
  assert.ok(help.includes("1.2.3"));
  assert.ok(help.includes("tegami <command>"));
  for (const text of ["serve", "enqueue QUEUE [JSON]", "stats [QUEUE]", "job ID", "dead list"]) {
    assert.ok(help.includes(text), text);
  }
  for (const text of ["dead requeue", "help", "--version", "tegami serve --help"]) {
    assert.ok(help.includes(text), text);
  }
  for (const spec of CLIENT_FLAGS) {
    assert.ok(help.includes(`--${spec.name}`) && help.includes(`env ${spec.env}`), spec.name);
  }
  assert.ok(help.includes("default http://127.0.0.1:7700"));
  for (const line of help.split("\n")) assert.ok(line.length <= 100, line);
});

Deno.test("serveHelp() offers PostgreSQL: the URL form of --db and its --pg-* flags", () => {
  const help = serveHelp();
  assert.match(help, /--db PATH\|URL/);
  assert.match(help, /postgres:\/\//);
  for (const flag of ["--pg-schema", "--pg-pool", "--pg-poll"]) {
    assert.ok(help.includes(flag), flag);
  }
});
