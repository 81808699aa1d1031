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
        "them in over HTTP or a WebSocket, and hands each to one consumer at a time (pushed " +
        "over a WebSocket, or leased by an HTTP long-poll) under a lease, until the consumer " +
        "acks it; a job that fails (nack) is retried with exponential backoff, and one whose " +
        "lease runs out is pending again at once, until its attempts are used up. With " +
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
    "      Trade the last commits on power loss for less fsync work under load.",
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
    ["", "  --priority N --key K --group G --delay 5m --max-attempts N;"],
    ["", "  --key-ttl 10m --on-duplicate ignore|replace|extend with --key;"],
    ["", "  --jobs: stdin lines are job objects {payload, key, …}; --batch-size N;"],
    ["", "  exits 1 when stdin is empty or cannot be read"],
    ["stats [QUEUE]", "show the counts of one queue, or of every queue (--json)"],
    ["job ID", "show one job; --wait 30s shows it once it has ended (done, dead or"],
    ["", "  cancelled), or as it is when the time runs out: exits 0 done, 1 dead"],
    ["", "  or cancelled, 3 not ended yet"],
    ["dead list QUEUE", "list the dead jobs of a queue as a table (--json: one JSON"],
    ["", "  object per line; --limit N --after ID)"],
    ["dead requeue QUEUE", "put dead jobs back to pending (all, or --ids 1,2,3)"],
    ["queue settings QUEUE", "show a queue's settings, or change the ones given and keep the"],
    ["", "  rest: --concurrency N --rate 100/1s --group-limit N --max-attempts N"],
    ["", "  --lease 30s --backoff 1s,1h --retain-done 24h --retain-dead 7d"],
    ["", "  --retain-pending 4d (how long a job may wait for a consumer)"],
    ["", "  --dead-letter-queue Q (where a job that runs out of attempts goes)"],
    ["", "  (none unsets one); --reset starts from the defaults; --json"],
    ["consume QUEUE --exec CMD", "run CMD for each job: payload on stdin, TEGAMI_JOB_ID,"],
    ["", "  TEGAMI_ATTEMPT and TEGAMI_QUEUE in its env; exit 0 acks with stdout"],
    ["", "  as the result, else nacks with stderr's tail (its last line"],
    ["", "  shown here too); exits 2 at once if CMD's program is not found"],
    ["", "  (--concurrency N --lease 30s)"],
    ["schedule put NAME", "define a recurring job: --queue Q --cron EXPR [--timezone TZ]"],
    ["", "  [--payload JSON] [--missed last|all|none] (see tegami schedule --help)"],
    ["schedule list|get|delete|pause|resume", ""],
    ["", "  list schedules with their next tick; read, delete, pause, resume one"],
    ["backup --to FILE", "have the server write a checked, compacted copy of its SQLite"],
    ["", "  database to FILE in its --backup-dir while it serves; --json"],
    ["", "  restore by starting tegami serve --db FILE"],
    ["backup --verify FILE", "check a copy offline: integrity, schema version, jobs by state"],
    ["bulk ACTION QUEUE", "requeue, cancel, delete or replay every job of QUEUE a filter takes;"],
    ["", "  counts only unless --run (see tegami bulk --help); bulk list|show|stop"],
    ["flow create FILE", "create a flow (jobs that wait for jobs) from a JSON file of"],
    ["", "  {key, nodes}, - for stdin (see tegami flow --help)"],
    ["flow show|cancel ID", "show a flow's nodes and their states; cancel what has not ended"],
    ["flow list", "list flows with their counts (--limit N --after ID --newest; --json)"],
    ["group list QUEUE", "list a queue's ordering groups: settings, jobs, limit, what holds"],
    ["", "  each back (--limit N --after NAME; --json)"],
    ["group show QUEUE GROUP", "show one group's settings and jobs"],
    ["group set QUEUE GROUP", "change a group's fair share and keep the rest: --weight W"],
    ["", "  --concurrency N|none --rate 10/1s|none (see tegami group --help)"],
    ["group reset QUEUE GROUP", "remove a group's settings (back to the defaults)"],
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
    "Flags of the client commands (enqueue, stats, job, dead, queue, consume, schedule, backup)",
    "and of bulk, flow and group:",
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

/** The help text of `tegami schedule`: its subcommands, the cron syntax, zones and policies. */
export function scheduleHelp(): string {
  return [
    "Usage: tegami schedule <put|list|get|delete|pause|resume> [NAME] [flags]",
    "",
    wrap(
      "A schedule enqueues one job into a queue at every tick of a cron expression, read in a " +
        "time zone. Each tick's job is stored exactly once, even across restarts and with " +
        "several servers on one PostgreSQL database; its dedup key is " +
        "schedule:NAME:TICK (the tick in ISO 8601 UTC).",
      "",
      0,
    ),
    "",
    "Subcommands:",
    "  put NAME      create or replace a schedule (its next tick is the first after now)",
    "    --queue Q            the queue each tick's job goes to (required)",
    '    --cron EXPR          when it ticks (required), e.g. "0 3 * * *"',
    "    --timezone TZ        IANA time zone the expression is read in; default UTC",
    "    --payload JSON       each job's payload; default null",
    "    --missed POLICY      ticks missed while no server ran: last (default) enqueues the",
    "                         latest once, all enqueues each (the 100 latest at most), none",
    "                         enqueues only a tick at most 60 s late",
    "    --priority N --max-attempts N --lease 30s   each job's options, as for enqueue",
    "  list          every schedule with its next and last tick (--json for JSON)",
    "  get NAME      one schedule as JSON",
    "  delete NAME   delete it (jobs it enqueued stay)",
    "  pause NAME    skip its ticks until resumed",
    "  resume NAME   tick again from the next tick after now (paused ticks stay skipped)",
    "",
    "Cron expressions: 5 fields, or 6 with seconds first",
    "  ┌ second (optional, 0-59)",
    "  │ ┌ minute (0-59)",
    "  │ │ ┌ hour (0-23)",
    "  │ │ │ ┌ day of month (1-31, L = last, W = nearest weekday)",
    "  │ │ │ │ ┌ month (1-12 or JAN-DEC)",
    "  │ │ │ │ │ ┌ day of week (0-7 or SUN-SAT, 0 and 7 = Sunday; # = nth, e.g. FRI#2)",
    "  * * * * * *      * any, 1,5 list, 1-5 range, */15 step; @hourly @daily @weekly @monthly",
    "  Day of month and day of week combine with OR, as in Vixie cron.",
    "",
    "Daylight-saving changes (as Vixie cron):",
    wrap(
      "A job at a fixed time (one value each in seconds, minutes, hours, like 30 2 * * *) runs " +
        "once on each day: in a skipped hour at the first valid time after the gap, in a " +
        "repeated hour at the first pass. A job with a wildcard, step, range or list in those " +
        "fields (like */15 * * * *) skips the times that do not exist and runs at both passes " +
        "of a repeated hour.",
      "  ",
      2,
    ),
    "",
    "Flags of every subcommand:",
    flagHelp(CLIENT_FLAGS),
    "",
    "Examples:",
    '  tegami schedule put nightly-report --queue reports --cron "0 3 * * *" \\',
    '      --timezone Europe/Berlin --payload \'{"report":"sales"}\'',
    "      Every day at 03:00 Berlin time, one job in queue reports.",
    '  tegami schedule put heartbeat --queue pings --cron "*/10 * * * * *" --missed none',
    "      Every 10 seconds; ticks missed while the server was down are skipped.",
    "  tegami schedule list",
    "  tegami schedule pause nightly-report",
    "",
  ].join("\n");
}

/** The help text of `tegami flow`: its subcommands and the shape of a flow file. */
export function flowHelp(): string {
  return [
    "Usage: tegami flow <create|show|list|cancel> [FILE|ID] [flags]",
    "",
    wrap(
      "A flow is a set of jobs that wait for jobs: each node is a job in a queue with a ref " +
        "and prerequisites (depends_on); a node stays blocked until its prerequisites end, " +
        "then runs with their results in its delivery. The whole flow is stored at once or " +
        "not at all. See docs/api.md, Flows.",
      "",
      0,
    ),
    "",
    "Subcommands:",
    "  create FILE   create a flow from FILE, a JSON file of the POST /v1/flows body (- reads",
    "                stdin); prints its id (--json: the ids of its jobs by ref)",
    "  show ID       the flow's counts and each node: ref, job id, queue, state, prerequisites",
    "  list          flows by id with their counts (--limit N, default 100; --after ID;",
    "                --newest: newest first)",
    "  cancel ID     cancel every job of the flow that has not ended",
    "",
    "A flow file:",
    '  {"key": "order-42",',
    '   "nodes": [{"ref": "fetch", "queue": "images", "payload": {"url": "…"}},',
    '             {"ref": "resize", "queue": "images", "payload": {}, "depends_on": ["fetch"]},',
    '             {"ref": "notify", "queue": "mail", "payload": {},',
    '              "depends_on": [{"ref": "resize", "on_failure": "run"}]}]}',
    "  on_failure of an edge: cancel (default: the node is cancelled if the prerequisite",
    "  ends dead or cancelled), ignore (it runs without it), run (it runs and sees the failure).",
    "  A node takes every option of an enqueued job (priority, delay_ms, max_attempts, …)",
    "  but no key: the flow's key deduplicates the whole flow.",
    "",
    "Flags of every subcommand:",
    flagHelp(CLIENT_FLAGS, [["--json", "print JSON (list: one flow per line)"]]),
    "",
    "Examples:",
    "  tegami flow create order-42.json",
    "  generate-flow | tegami flow create -",
    "  tegami flow show 7",
    "  tegami flow cancel 7",
    "",
  ].join("\n");
}
