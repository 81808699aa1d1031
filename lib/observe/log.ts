/**
 * Logs: one line per event that matters, `pretty` for people or `json` for machines (one JSON
 * object per line with `time`, `level`, `msg` and the fields). Callers pass structured fields;
 * never a token or a payload.
 *
 * As a safety net, fields whose name says they hold a secret or user data (`token`,
 * `authorization`, `payload`, …) are written as `[redacted]`, and every line is kept to one
 * line: a newline inside a message cannot forge a second entry.
 *
 * What is logged, and at which level:
 *
 * - info: startup (address, database, sync mode, engine and version, auth on or off), shutdown,
 *   queue paused or resumed, dead letters requeued, a job cancelled or removed by hand.
 * - warn: a WebSocket connection cut by the server (failed auth, too slow, oversized frame).
 * - error: every 5xx answer with its cause, failures of background work (timers, sweeps, the
 *   dashboard feed, releasing a closed connection's leases).
 *
 * @module
 */

/** Severity, lowest first. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** How lines are written. */
export type LogFormat = "pretty" | "json";

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** Structured fields of a log line. */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

/** Writes log lines. */
export interface Logger {
  /** Logs at `level` unless filtered out. */
  log(level: LogLevel, message: string, fields?: LogFields): void;
  /** Debug detail. */
  debug(message: string, fields?: LogFields): void;
  /** Something that happened. */
  info(message: string, fields?: LogFields): void;
  /** Something that needs a look. */
  warn(message: string, fields?: LogFields): void;
  /** Something that failed. */
  error(message: string, fields?: LogFields): void;
}

/** Options of {@linkcode createLogger}. */
export interface LoggerOptions {
  /** Lowest level written. @default "info" */
  level?: LogLevel;
  /** Line format. @default "pretty" */
  format?: LogFormat;
  /** Where lines go. @default a write to stderr */
  write?: (line: string) => void;
  /** Time source for timestamps. @default Date.now */
  now?: () => number;
}

/** Field names never written as they are (compared lowercase). */
const REDACTED: ReadonlySet<string> = new Set([
  "token",
  "tokens",
  "authorization",
  "password",
  "secret",
  "payload",
  "checkpoint",
  "result",
  "data",
]);

function safeValue(
  name: string,
  value: string | number | boolean | null,
): string | number | boolean | null {
  return REDACTED.has(name.toLowerCase()) ? "[redacted]" : value;
}

function prettyValue(value: string | number | boolean | null): string {
  if (typeof value === "string" && /^[^\s"=]+$/.test(value)) return value;
  return JSON.stringify(value);
}

/** Makes a logger. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const min = RANK[options.level ?? "info"];
  const format = options.format ?? "pretty";
  const encoder = new TextEncoder();
  const write = options.write ?? ((line: string) => {
    Deno.stderr.writeSync(encoder.encode(line + "\n"));
  });
  const now = options.now ?? Date.now;
  const log = (level: LogLevel, message: string, fields: LogFields = {}) => {
    if (RANK[level] < min) return;
    const time = new Date(now()).toISOString();
    if (format === "json") {
      const entry: Record<string, unknown> = { time, level, msg: message };
      for (const [name, value] of Object.entries(fields)) {
        if (value !== undefined && !(name in entry)) entry[name] = safeValue(name, value);
      }
      write(JSON.stringify(entry));
      return;
    }
    let line = `${time} ${level.toUpperCase().padEnd(5)} ${message.replace(/[\r\n]+/g, " ")}`;
    for (const [name, value] of Object.entries(fields)) {
      if (value !== undefined) line += ` ${name}=${prettyValue(safeValue(name, value))}`;
    }
    write(line);
  };
  return {
    log,
    debug: (m, f) => log("debug", m, f),
    info: (m, f) => log("info", m, f),
    warn: (m, f) => log("warn", m, f),
    error: (m, f) => log("error", m, f),
  };
}

/** A logger that writes nothing (tests). */
export const silentLogger: Logger = createLogger({ write: () => {} });

/** A one-line description of an internal failure's cause, for the log. */
export function describeCause(cause: unknown): string {
  if (cause instanceof Error) {
    // An inner error's message is added unless the outer one already ends with it.
    const inner = cause.cause instanceof Error && !cause.message.endsWith(cause.cause.message)
      ? `: ${cause.cause.message}`
      : "";
    return `${cause.name}: ${cause.message}${inner}`.slice(0, 500);
  }
  return String(cause).slice(0, 500);
}
