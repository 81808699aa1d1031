/**
 * The help texts of `tegami` and `tegami serve`, built from the flag tables so every flag shows
 * with its env var, default and range, and none can be missing.
 *
 * @module
 */

import { CLIENT_FLAGS } from "./client_config.ts";
import { type FlagTable, rangeText, showValue } from "./flags.ts";
import { SERVE_FLAGS } from "./serve_config.ts";

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
function flagHelp(table: FlagTable, others: [string, string][] = []): string {
  const specs = Object.values(table);
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
      `default ${showValue(spec, spec.default)}`,
    ];
    if (spec.kind === "enum") meta.push(`one of ${spec.choices?.join(", ")}`);
    const range = rangeText(spec);
    if (range !== null) meta.push(range);
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
      "Runs the tegami job queue server. It keeps jobs in one SQLite file, or in PostgreSQL " +
        "(--db postgres://…), where any number of servers may share one database; it takes " +
        "them in over HTTP, and pushes each to one " +
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
    "  tegami serve --db postgres://tegami:secret@db.internal:5432/jobs?sslmode=require",
    "      Keep jobs in PostgreSQL (schema tegami); start as many such servers as you like.",
    "",
  ].join("\n");
}

/** The help text of `tegami` itself: its commands, and the flags the client commands share. */
export function topLevelHelp(version: string): string {
  const commands: [string, string][] = [
    ["serve", "run the server (see tegami serve --help)"],
    ["enqueue QUEUE [JSON]", "add one job; without JSON, one payload per line of NDJSON on stdin"],
    ["", "  --priority N --key K --group G --delay 5m --max-attempts N for the job(s);"],
    ["", "  --jobs: stdin lines are job objects {payload, key, …}; --batch-size N"],
    ["stats [QUEUE]", "show the counts of one queue, or of every queue (--json)"],
    ["job ID", "show one job"],
    ["dead list QUEUE", "list the dead jobs of a queue (--limit N --after ID)"],
    ["dead requeue QUEUE", "put dead jobs back to pending (all, or --ids 1,2,3)"],
    ["queue settings QUEUE", "show a queue's settings, or change the ones given and keep the"],
    ["", "  rest: --concurrency N --rate 100/1s --group-limit N --max-attempts N"],
    ["", "  --lease 30s --backoff 1s,1h --retain-done 24h --retain-dead 7d"],
    ["", "  (none unsets one); --reset starts from the defaults; --json"],
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
    "Flags of the client commands (enqueue, stats, job, dead, queue, consume):",
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
