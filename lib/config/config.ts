/**
 * Configuration, resolved once: a flag beats its `TEGAMI_*` env var, which beats the default.
 *
 * One table per command ({@linkcode SERVE_FLAGS}, {@linkcode CLIENT_FLAGS}) drives the parser,
 * the env lookup, the validation and the help text, so a flag cannot exist in one and be missing
 * from another. Nothing here reads `Deno.args` or `Deno.env`: the caller passes both in, which
 * keeps this module runtime-neutral and lets tests feed it any environment.
 *
 * @module
 */

import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { formatDuration, formatSize, parseDuration, parseSize } from "./units.ts";
import { MAX_LEASE_MS, MIN_LEASE_MS } from "../core/limits.ts";
import type { LogFormat, LogLevel } from "../observe/log.ts";

/** How a flag's text is read: each kind has one parser and one "expected …" message. */
export type FlagKind = "string" | "int" | "size" | "duration" | "bool" | "enum" | "list";

/** A resolved flag value: sizes in bytes, durations in ms, `null` for "none". */
export type FlagValue = string | number | boolean | null | readonly string[];

/** One row of a flag table. */
export interface FlagSpec {
  /** The flag without its dashes, e.g. `max-payload`. */
  readonly name: string;
  /** Its env var: `TEGAMI_` and the name in upper snake case, e.g. `TEGAMI_MAX_PAYLOAD`. */
  readonly env: string;
  /** How its text is parsed and validated. */
  readonly kind: FlagKind;
  /** The value when neither the flag nor the env var is given; `null` means none. */
  readonly default: FlagValue;
  /** One line for the help text, lower case, no final period. */
  readonly description: string;
  /** The value's name in the help text, e.g. `PATH`; by default derived from the kind. */
  readonly placeholder?: string;
  /** The values an `enum` flag accepts. */
  readonly choices?: readonly string[];
  /** The smallest value an `int`, `size` or `duration` flag accepts (inclusive). */
  readonly min?: number;
  /** The largest value an `int`, `size` or `duration` flag accepts (inclusive). */
  readonly max?: number;
}

/** A configuration problem, safe to print as the one-line reason for exit code 1. */
export class ConfigError extends Error {
  /** The flag at fault, without dashes (`port`); `""` for a stray positional argument. */
  readonly field: string;

  /** Makes an error about `field` with a sentence-case message. */
  constructor(field: string, message: string) {
    super(message);
    this.name = "ConfigError";
    this.field = field;
  }
}

/** Builds a table row, deriving the env var from the name so the two cannot drift apart. */
function flag(
  name: string,
  kind: FlagKind,
  defaultValue: FlagValue,
  description: string,
  more: Omit<FlagSpec, "name" | "env" | "kind" | "default" | "description"> = {},
): FlagSpec {
  const env = `TEGAMI_${name.toUpperCase().replaceAll("-", "_")}`;
  return { name, env, kind, default: defaultValue, description, ...more };
}

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Every flag of `tegami serve`, in help order. */
export const SERVE_FLAGS: readonly FlagSpec[] = [
  flag("db", "string", "tegami.db", "path to the SQLite file, or postgres://… URL", {
    placeholder: "PATH|URL",
  }),
  flag("host", "string", "127.0.0.1", "interface to listen on", { placeholder: "HOST" }),
  flag("port", "int", 7700, "port to listen on; 0 picks any free port", { min: 0, max: 65535 }),
  flag("tokens", "string", null, "JSON tokens file; without one, anyone may call the API", {
    placeholder: "FILE",
  }),
  flag(
    "sync",
    "enum",
    "full",
    "full fsyncs every commit; normal is faster but may lose the last commits on power loss",
    { choices: ["full", "normal"] },
  ),
  flag("max-payload", "size", MiB, "largest job payload, measured as its JSON text", {
    min: 1,
    max: GiB,
  }),
  flag("max-body", "size", 16 * MiB, "largest HTTP request body", { min: KiB, max: GiB }),
  flag("max-batch", "int", 1000, "most jobs in one batch enqueue", { min: 1, max: 100_000 }),
  flag(
    "retain-done",
    "duration",
    DAY,
    "how long done and cancelled jobs (and their keys) are kept",
    { min: 0, max: 365 * DAY },
  ),
  flag("lease", "duration", 30 * SECOND, "lease length when neither consumer nor job sets one", {
    min: MIN_LEASE_MS,
    max: MAX_LEASE_MS,
  }),
  flag("backoff-base", "duration", SECOND, "delay before the first retry; doubles each attempt", {
    min: 1,
    max: DAY,
  }),
  flag("backoff-max", "duration", HOUR, "longest delay between retries", { min: 1, max: 30 * DAY }),
  flag(
    "max-connections",
    "int",
    10_000,
    "most open connections, HTTP and WebSocket (capped by the descriptor limit; past it, 503)",
    {
      min: 1,
      max: 1_000_000,
    },
  ),
  flag(
    "header-timeout",
    "duration",
    10 * SECOND,
    "time a new connection has to send its first complete request head",
    { min: 100, max: HOUR },
  ),
  flag(
    "idle-timeout",
    "duration",
    30 * SECOND,
    "time a kept-alive HTTP connection may wait for its next request head",
    { min: 100, max: HOUR },
  ),
  flag(
    "body-timeout",
    "duration",
    30 * SECOND,
    "time a request body has to arrive in full (past it, 408)",
    { min: 100, max: HOUR },
  ),
  flag(
    "body-budget",
    "size",
    64 * MiB,
    "request body bytes held at once across all requests (past it, 503)",
    { min: KiB, max: 64 * GiB },
  ),
  flag(
    "shutdown-grace",
    "duration",
    10 * SECOND,
    "time requests in flight get to finish at shutdown before their connections are cut",
    { min: 0, max: 10 * MINUTE },
  ),
  flag(
    "max-queues",
    "int",
    10_000,
    "most distinct queues; enqueueing to a new queue past it answers 409",
    { min: 1, max: 10_000_000 },
  ),
  flag(
    "metrics-queues",
    "int",
    100,
    "queues given their own series in /metrics (the busiest; all are in the totals)",
    { min: 0, max: 100_000 },
  ),
  flag(
    "allowed-hosts",
    "list",
    [],
    "host names accepted in the Host header when auth is off, besides localhost and IP addresses",
    { placeholder: "HOSTS" },
  ),
  flag(
    "allowed-origins",
    "list",
    [],
    "browser origins allowed besides the same origin, comma separated, or * for any",
    { placeholder: "ORIGINS" },
  ),
  flag("insecure", "bool", false, "allow listening beyond loopback without --tokens"),
  flag("log-level", "enum", "info", "least severe log entry written", {
    choices: ["debug", "info", "warn", "error"],
    placeholder: "LEVEL",
  }),
  flag("log-format", "enum", "pretty", "pretty for people, json for log collectors", {
    choices: ["pretty", "json"],
  }),
  flag("tls-cert", "string", null, "TLS certificate chain (PEM); needs --tls-key", {
    placeholder: "FILE",
  }),
  flag("tls-key", "string", null, "TLS private key (PEM); needs --tls-cert", {
    placeholder: "FILE",
  }),
  flag(
    "ping-interval",
    "duration",
    10 * SECOND,
    "WebSocket ping interval; two unanswered pings close the connection",
    { min: 10, max: HOUR },
  ),
  flag(
    "unsafe-fault",
    "enum",
    null,
    "TEST ONLY, never in production: breaks the server on purpose (ack-before-commit answers " +
      "writes before COMMIT; any-token lets an ack present any lease token)",
    { choices: ["ack-before-commit", "any-token"], placeholder: "FAULT" },
  ),
];

/** The settings of `tegami serve`, validated; sizes in bytes, durations in ms. */
export interface ServeConfig {
  /** SQLite file path, or a `postgres://` / `postgresql://` URL. */
  db: string;
  /** Interface to listen on. */
  host: string;
  /** Port to listen on; 0 picks any free port. */
  port: number;
  /** JSON tokens file; `null` turns auth off. */
  tokensFile: string | null;
  /** SQLite `synchronous` mode. */
  sync: "full" | "normal";
  /** Largest job payload in bytes (its JSON text); never above {@linkcode ServeConfig.maxBody}. */
  maxPayload: number;
  /** Largest HTTP request body in bytes. */
  maxBody: number;
  /** Most jobs in one batch enqueue. */
  maxBatch: number;
  /** How long done and cancelled jobs are kept, in ms. */
  retainDoneMs: number;
  /** Server default lease length in ms. */
  leaseMs: number;
  /** First retry delay in ms; never above {@linkcode ServeConfig.backoffMaxMs}. */
  backoffBaseMs: number;
  /** Longest retry delay in ms. */
  backoffMaxMs: number;
  /** Most open connections, HTTP and WebSocket. */
  maxConnections: number;
  /** Time a new connection has to send its first request head, in ms. */
  headerTimeoutMs: number;
  /** Time a kept-alive connection may wait for its next request head, in ms. */
  idleTimeoutMs: number;
  /** Time a request body has to arrive in full, in ms. */
  bodyTimeoutMs: number;
  /** Request body bytes held at once across all requests. */
  bodyBudget: number;
  /** Time requests in flight get at shutdown, in ms. */
  shutdownGraceMs: number;
  /** Most distinct queues. */
  maxQueues: number;
  /** Queues with their own series in `/metrics`. */
  metricsQueues: number;
  /** Lower-case host names accepted in `Host` when auth is off (besides localhost and IPs). */
  allowedHosts: string[];
  /** Normalized origins (`scheme://host[:port]`) allowed besides the same origin, or `"*"`. */
  allowedOrigins: string[] | "*";
  /** Allow a non-loopback bind without tokens. */
  insecure: boolean;
  /** Least severe log entry written. */
  logLevel: LogLevel;
  /** Log line format. */
  logFormat: LogFormat;
  /** TLS certificate file; set exactly when {@linkcode ServeConfig.tlsKey} is. */
  tlsCert: string | null;
  /** TLS private key file; set exactly when {@linkcode ServeConfig.tlsCert} is. */
  tlsKey: string | null;
  /** WebSocket ping interval in ms. */
  pingIntervalMs: number;
  /**
   * TEST ONLY: a fault the server commits on purpose (see the `unsafe-fault` flag), or null.
   * The server logs a loud warning line at startup when it is set.
   */
  unsafeFault: "ack-before-commit" | "any-token" | null;
}

/** Every flag shared by the client subcommands (`enqueue`, `stats`, `job`, `dead`). */
export const CLIENT_FLAGS: readonly FlagSpec[] = [
  flag("url", "string", "http://127.0.0.1:7700", "server to talk to", { placeholder: "URL" }),
  flag("token", "string", null, "API token; needed when the server has a tokens file", {
    placeholder: "TOKEN",
  }),
];

/** Where a client subcommand finds the server. */
export interface ClientConfig {
  /** Base URL of the server, `http(s)://…`, without a trailing slash. */
  url: string;
  /** API token, or `null` to send none. */
  token: string | null;
}

/** The values of the extra flags passed to {@linkcode resolveClientConfig}, by name. */
export type ExtraValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** What {@linkcode resolveClientConfig} found in a client subcommand's arguments. */
export interface ClientArgs {
  /** The shared client settings. */
  config: ClientConfig;
  /** The positional arguments, in order (everything after `--` included). */
  rest: string[];
  /** The values of the subcommand's extra flags; absent ones are `undefined`. */
  values: ExtraValues;
}

/** A resolved value and the text it came from; `text` is `null` when it is the default. */
interface Resolved {
  value: FlagValue;
  text: string | null;
}

const BOOL_TEXT: Readonly<Record<string, boolean>> = {
  "1": true,
  "true": true,
  "yes": true,
  "0": false,
  "false": false,
  "no": false,
};

/** `--port (TEGAMI_PORT)`, or just `--name` for a flag without an env var. */
function label(name: string, spec?: FlagSpec): string {
  return spec === undefined ? `--${name}` : `--${name} (${spec.env})`;
}

/** Formats a value of `spec` for people, in the units the flag takes. */
function show(spec: FlagSpec, value: FlagValue): string {
  if (value === null) return "none";
  if (Array.isArray(value)) return value.length === 0 ? "none" : value.join(",");
  if (spec.kind === "size") return formatSize(value as number);
  if (spec.kind === "duration") return formatDuration(value as number);
  return String(value);
}

/** The "expected …" part of an error about `spec`. */
function expected(spec: FlagSpec): string {
  const range = spec.min !== undefined && spec.max !== undefined
    ? ` from ${show(spec, spec.min)} to ${show(spec, spec.max)}`
    : "";
  switch (spec.kind) {
    case "string":
      return "a non-empty value";
    case "int":
      return `an integer${range}`;
    case "size":
      return `a size${range} (like 512KiB, 1MiB or a number of bytes)`;
    case "duration":
      return `a duration${range} (like 500ms, 30s, 5m, 24h or a number of ms)`;
    case "bool":
      return "one of 1, 0, true, false, yes, no";
    case "enum":
      return `one of ${spec.choices?.join(", ")}`;
    case "list":
      return "a comma-separated list";
  }
}

/** Reads one flag's text; throws a {@linkcode ConfigError} naming the flag and its env var. */
function parseValue(spec: FlagSpec, text: string): FlagValue {
  const fail = (): never => {
    throw new ConfigError(
      spec.name,
      `Invalid ${label(spec.name, spec)}: expected ${expected(spec)}, got "${text}"`,
    );
  };
  const inRange = (n: number): number =>
    (spec.min !== undefined && n < spec.min) || (spec.max !== undefined && n > spec.max)
      ? fail()
      : n;
  switch (spec.kind) {
    case "string":
      return text.trim() === "" ? fail() : text;
    case "int":
      return /^\s*\d+\s*$/.test(text) && Number.isSafeInteger(Number(text))
        ? inRange(Number(text))
        : fail();
    case "size":
    case "duration": {
      let n: number;
      try {
        n = spec.kind === "size" ? parseSize(text) : parseDuration(text);
      } catch {
        return fail();
      }
      return inRange(n);
    }
    case "bool":
      return BOOL_TEXT[text.trim().toLowerCase()] ?? fail();
    case "enum": {
      const choice = text.trim().toLowerCase();
      return spec.choices?.includes(choice) ? choice : fail();
    }
    case "list":
      return text.split(",").map((item) => item.trim()).filter((item) => item !== "");
  }
}

/** The `parseArgs` options of a flag table: booleans for `bool`, strings for the rest. */
function parserOptions(specs: readonly FlagSpec[]): ParseArgsOptionsConfig {
  const options: ParseArgsOptionsConfig = {};
  for (const spec of specs) {
    options[spec.name] = { type: spec.kind === "bool" ? "boolean" : "string" };
  }
  return options;
}

/** Runs `parseArgs` in strict mode, turning its errors into {@linkcode ConfigError}s. */
function parseFlags(
  args: string[],
  options: ParseArgsOptionsConfig,
  specs: readonly FlagSpec[],
  command: string,
): { values: ExtraValues; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args,
      options,
      strict: true,
      allowPositionals: true,
    });
    return { values: { ...values }, positionals };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const message = error instanceof Error ? error.message : String(error);
    const written = /'(-{1,2}[^' <]+)/.exec(message)?.[1] ?? "";
    const name = written.replace(/^-+/, "");
    const spec = specs.find((s) => s.name === name);
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      throw new ConfigError(name, `Unknown flag ${written}: see ${command} --help`);
    }
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
      const detail = options[name]?.type === "boolean"
        ? `it takes no value; write ${written} alone` +
          (spec === undefined ? "" : ` or set ${spec.env}=1`)
        : `missing value (write ${written}=VALUE for a value that starts with -)`;
      throw new ConfigError(name, `Invalid ${label(name, spec)}: ${detail}`);
    }
    throw error;
  }
}

/**
 * Resolves every flag of `specs`: the flag if given, else its env var if set and not blank,
 * else the default. Blank env vars count as unset, so `TEGAMI_TOKENS=` means "no tokens".
 */
function resolveTable(
  specs: readonly FlagSpec[],
  values: ExtraValues,
  env: Record<string, string | undefined>,
): Map<string, Resolved> {
  const resolved = new Map<string, Resolved>();
  for (const spec of specs) {
    const fromFlag = values[spec.name];
    const fromEnv = env[spec.env];
    if (typeof fromFlag === "boolean") {
      resolved.set(spec.name, { value: fromFlag, text: `--${spec.name}` });
    } else if (typeof fromFlag === "string") {
      resolved.set(spec.name, { value: parseValue(spec, fromFlag), text: fromFlag });
    } else if (fromEnv !== undefined && fromEnv.trim() !== "") {
      resolved.set(spec.name, { value: parseValue(spec, fromEnv), text: fromEnv });
    } else {
      resolved.set(spec.name, { value: spec.default, text: null });
    }
  }
  return resolved;
}

/** Whether `host` can only be reached from this machine. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  return bare === "localhost" || bare === "::1" || bare === "0:0:0:0:0:0:0:1" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

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

/**
 * Resolves the settings of `tegami serve` from its arguments (without the `serve` word) and the
 * environment: a flag beats its env var, which beats the default. `--help` is not handled here;
 * check {@linkcode wantsHelp} first.
 *
 * @throws {ConfigError} for an unknown flag, a positional argument, or an invalid value; the
 * message names the flag and its env var.
 */
export function resolveServeConfig(
  args: string[],
  env: Record<string, string | undefined>,
): ServeConfig {
  const parsed = parseFlags(args, parserOptions(SERVE_FLAGS), SERVE_FLAGS, "tegami serve");
  if (parsed.positionals.length > 0) {
    throw new ConfigError(
      "",
      `Unexpected argument "${parsed.positionals[0]}": tegami serve takes only flags`,
    );
  }
  const resolved = resolveTable(SERVE_FLAGS, parsed.values, env);
  const spec = (name: string) => SERVE_FLAGS.find((s) => s.name === name)!;
  const get = (name: string) => resolved.get(name)!;
  const fail = (name: string, detail: string): never => {
    throw new ConfigError(name, `Invalid ${label(name, spec(name))}: ${detail}`);
  };

  // A pair out of order is blamed on whichever side the user set, so the message quotes their text.
  const ordered = (low: string, high: string) => {
    const a = get(low), b = get(high);
    if ((a.value as number) <= (b.value as number)) return;
    if (a.text !== null) {
      fail(low, `must not exceed --${high} (${show(spec(high), b.value)}), got "${a.text}"`);
    }
    fail(high, `must be at least --${low} (${show(spec(low), a.value)}), got "${b.text}"`);
  };
  ordered("max-payload", "max-body");
  ordered("backoff-base", "backoff-max");

  const tlsCert = get("tls-cert").value as string | null;
  const tlsKey = get("tls-key").value as string | null;
  if (tlsCert !== null && tlsKey === null) fail("tls-key", "missing; --tls-cert needs it");
  if (tlsKey !== null && tlsCert === null) fail("tls-cert", "missing; --tls-key needs it");

  const origins = get("allowed-origins").value as string[];
  let allowedOrigins: string[] | "*";
  if (origins.includes("*")) {
    if (origins.length > 1) {
      fail("allowed-origins", `"*" must stand alone, got "${get("allowed-origins").text}"`);
    }
    allowedOrigins = "*";
  } else {
    allowedOrigins = origins.map((origin) =>
      normalizeOrigin(origin) ??
        fail("allowed-origins", `expected origins like https://example.com, got "${origin}"`)
    );
  }

  const host = get("host").value as string;
  const tokensFile = get("tokens").value as string | null;
  const insecure = get("insecure").value as boolean;
  if (!isLoopbackHost(host) && tokensFile === null && !insecure) {
    fail(
      "host",
      `listening on "${host}" without --tokens opens every queue to anyone; ` +
        "give --tokens FILE, or --insecure to allow it",
    );
  }

  return {
    db: get("db").value as string,
    host,
    port: get("port").value as number,
    tokensFile,
    sync: get("sync").value as ServeConfig["sync"],
    maxPayload: get("max-payload").value as number,
    maxBody: get("max-body").value as number,
    maxBatch: get("max-batch").value as number,
    retainDoneMs: get("retain-done").value as number,
    leaseMs: get("lease").value as number,
    backoffBaseMs: get("backoff-base").value as number,
    backoffMaxMs: get("backoff-max").value as number,
    maxConnections: get("max-connections").value as number,
    headerTimeoutMs: get("header-timeout").value as number,
    idleTimeoutMs: get("idle-timeout").value as number,
    bodyTimeoutMs: get("body-timeout").value as number,
    bodyBudget: get("body-budget").value as number,
    shutdownGraceMs: get("shutdown-grace").value as number,
    maxQueues: get("max-queues").value as number,
    metricsQueues: get("metrics-queues").value as number,
    allowedHosts: (get("allowed-hosts").value as string[]).map((h) => h.toLowerCase()),
    allowedOrigins,
    insecure,
    logLevel: get("log-level").value as ServeConfig["logLevel"],
    logFormat: get("log-format").value as ServeConfig["logFormat"],
    tlsCert,
    tlsKey,
    pingIntervalMs: get("ping-interval").value as number,
    unsafeFault: get("unsafe-fault").value as ServeConfig["unsafeFault"],
  };
}

/**
 * Resolves the shared client settings (`--url`, `--token`) of a client subcommand, plus the
 * subcommand's own `extra` flags (no env vars for those). Positional arguments are returned in
 * `rest`, in order.
 *
 * @throws {ConfigError} for an unknown flag, a missing value or an invalid URL.
 * @throws {TypeError} when `extra` redefines `url` or `token`.
 */
export function resolveClientConfig(
  args: string[],
  env: Record<string, string | undefined>,
  extra: ParseArgsOptionsConfig = {},
): ClientArgs {
  const base = parserOptions(CLIENT_FLAGS);
  for (const name of Object.keys(extra)) {
    if (name in base) throw new TypeError(`Cannot add client flag --${name}: it is shared`);
  }
  const parsed = parseFlags(args, { ...extra, ...base }, CLIENT_FLAGS, "tegami help");
  const resolved = resolveTable(CLIENT_FLAGS, parsed.values, env);
  const url = resolved.get("url")!;
  const text = url.value as string;
  let parsedUrl: URL | null = null;
  try {
    parsedUrl = new URL(text);
  } catch {
    // Reported below, with the flag's name.
  }
  if (parsedUrl === null || (parsedUrl.protocol !== "http:" && parsedUrl.protocol !== "https:")) {
    const spec = CLIENT_FLAGS[0];
    throw new ConfigError(
      "url",
      `Invalid ${label("url", spec)}: expected an http:// or https:// URL, got "${text}"`,
    );
  }
  const values: ExtraValues = {};
  for (const name of Object.keys(extra)) values[name] = parsed.values[name];
  return {
    config: {
      url: text.replace(/\/+$/, ""),
      token: resolved.get("token")!.value as string | null,
    },
    rest: parsed.positionals,
    values,
  };
}

/** Whether `args` ask for help (`--help` or `-h` before any `--`). */
export function wantsHelp(args: string[]): boolean {
  for (const arg of args) {
    if (arg === "--") return false;
    if (arg === "--help" || arg === "-h") return true;
  }
  return false;
}

const HELP_WIDTH = 100;

/** Wraps `text` to {@linkcode HELP_WIDTH}, indenting every line after the first by `indent`. */
function wrap(text: string, first: string, indent: number): string {
  const lines: string[] = [];
  let line = first;
  for (const word of text.split(" ")) {
    if (line.trim() !== "" && line.length + 1 + word.length > HELP_WIDTH) {
      lines.push(line);
      line = " ".repeat(indent) + word;
    } else {
      line += line.length === 0 || line.endsWith(" ") ? word : ` ${word}`;
    }
  }
  lines.push(line);
  return lines.join("\n");
}

/**
 * The flag list of a help text: each flag, its description, then its env var and default.
 * `others` are flags outside the table (like `--help`), aligned with the rest.
 */
function flagHelp(specs: readonly FlagSpec[], others: [string, string][] = []): string {
  const heads = specs.map((spec) => {
    const placeholder = spec.placeholder ??
      {
        string: "VALUE",
        int: "N",
        size: "SIZE",
        duration: "DURATION",
        bool: "",
        enum: spec.choices?.join("|") ?? "",
        list: "LIST",
      }[spec.kind];
    return `  --${spec.name}${placeholder === "" ? "" : ` ${placeholder}`}`;
  });
  const column = Math.max(...heads.map((head) => head.length)) + 2;
  const rows = specs.map((spec, i) => {
    const meta = [
      `env ${spec.env}${spec.kind === "bool" ? " (1/0, true/false, yes/no)" : ""}`,
      `default ${show(spec, spec.default)}`,
    ];
    if (spec.kind === "enum") meta.push(`one of ${spec.choices?.join(", ")}`);
    if (spec.min !== undefined && spec.max !== undefined) {
      meta.push(`from ${show(spec, spec.min)} to ${show(spec, spec.max)}`);
    }
    return [
      wrap(spec.description, heads[i].padEnd(column), column),
      wrap(meta.join("; "), " ".repeat(column), column),
    ].join("\n");
  });
  for (const [head, description] of others) {
    rows.push(wrap(description, `  ${head}`.padEnd(column), column));
  }
  return rows.join("\n");
}

/** The help text of `tegami serve`, built from {@linkcode SERVE_FLAGS}. */
export function serveHelp(): string {
  return [
    "Usage: tegami serve [flags]",
    "",
    wrap(
      "Runs the tegami job queue server. It keeps jobs in one SQLite file (or in PostgreSQL, " +
        "shared by any number of servers), takes them in over HTTP, and pushes each to one " +
        "consumer at a time over a WebSocket, under a lease, until the consumer acks it; a job " +
        "whose lease runs out, or that fails, is retried with exponential backoff. With " +
        "--sync full, every acknowledged write is fsynced before the answer. It stops cleanly on SIGINT " +
        "or SIGTERM, and recovers whatever the last stop left on start.",
      "",
      0,
    ),
    "",
    wrap(
      "Every flag can also be set by its environment variable: a flag beats its variable, " +
        "and a variable beats the default.",
      "",
      0,
    ),
    "",
    "Flags:",
    flagHelp(SERVE_FLAGS, [["-h, --help", "show this help"]]),
    "",
    "Units:",
    "  sizes      512KiB, 1MiB, 2GiB (powers of 1024), 10KB, 1MB (powers of 1000), or bytes",
    "  durations  500ms, 30s, 5m, 24h, 1d, or ms; decimals are fine if they give whole ms (1.5s)",
    "",
    "Examples:",
    "  tegami serve",
    "      Serve ./tegami.db on 127.0.0.1:7700, without auth.",
    "  tegami serve --db /var/lib/tegami/jobs.db --port 8080 --tokens tokens.json --host 0.0.0.0",
    "      Serve on every interface; callers need a token from tokens.json.",
    "  TEGAMI_SYNC=normal tegami serve",
    "      Trade the last commits on power loss for faster writes.",
    "",
  ].join("\n");
}

/** The help text of `tegami` itself: its commands, and the flags the client commands share. */
export function topLevelHelp(version: string): string {
  const commands: [string, string][] = [
    ["serve", "run the server (see tegami serve --help)"],
    ["enqueue QUEUE [JSON]", "add one job; without JSON, one payload per line of NDJSON on stdin"],
    ["", "  --priority N --key K --delay 5m --max-attempts N for the job(s);"],
    ["", "  --jobs: stdin lines are job objects {payload, key, …}; --batch-size N"],
    ["stats [QUEUE]", "show the counts of one queue, or of every queue (--json)"],
    ["job ID", "show one job"],
    ["dead list QUEUE", "list the dead jobs of a queue (--limit N --after ID)"],
    ["dead requeue QUEUE", "put dead jobs back to pending (all, or --ids 1,2,3)"],
    ["consume QUEUE --exec CMD", "run CMD for each job: payload on stdin, TEGAMI_JOB_ID and"],
    ["", "  TEGAMI_ATTEMPT in its env; exit 0 acks with stdout as the result,"],
    ["", "  else nacks with stderr's tail (--concurrency N --lease 30s)"],
    ["help", "show this help"],
  ];
  return [
    `tegami ${version}: a durable job queue server`,
    "",
    "Usage: tegami <command> [flags] [arguments]",
    "",
    "Commands:",
    ...commands.map(([usage, what]) => `  ${usage.padEnd(26)}${what}`),
    "",
    "Flags of the client commands (enqueue, stats, job, dead, consume):",
    flagHelp(CLIENT_FLAGS),
    "",
    "Other flags:",
    `  ${"--version".padEnd(22)}print the version`,
    `  ${"-h, --help".padEnd(22)}show this help`,
    "",
    "Run tegami serve --help for the server's flags.",
    "",
  ].join("\n");
}
