/**
 * The client commands of the `tegami` program: `enqueue`, `stats`, `job`, `dead`,
 * `queue settings`, `consume --exec`, `schedule` (schedule_command.ts), `backup`
 * (backup_command.ts), `bulk` (bulk_command.ts), `flow` (flow_command.ts) and `group`
 * (group_command.ts). They talk to a running server through the client library (or, for what it
 * does not cover, api_call.ts), find it with `--url`/`TEGAMI_URL` and authenticate with
 * `--token`/`TEGAMI_TOKEN`.
 *
 * @module
 */

import {
  consume,
  JobFailure,
  type JobInfo,
  type JobOptions,
  type QueueSettings,
  TegamiClient,
  TegamiError,
} from "../client/mod.ts";
import { resolveClientConfig } from "../config/client_config.ts";
import { ConfigError, durationFlag } from "../config/flags.ts";
import { JOB_STATES } from "../core/job.ts";
import { enqueueStream } from "./enqueue_stream.ts";
import { execProblem } from "./exec_check.ts";
import { textTable } from "./table.ts";
import { scheduleCommand, ScheduleUsageError } from "./schedule_command.ts";
import { backupCommand, BackupUsageError } from "./backup_command.ts";
import { bulkCommand, BulkUsageError } from "./bulk_command.ts";
import { flowCommand, FlowUsageError } from "./flow_command.ts";
import { groupCommand, GroupUsageError } from "./group_command.ts";
import { apiCaller, ApiRefused } from "./api_call.ts";

/** Where a command reads and writes; the process's own streams in production. */
export interface CommandIO {
  /** Standard input. */
  stdin: ReadableStream<Uint8Array>;
  /** Writes to standard output. */
  out(text: string): void;
  /** Writes to standard error. */
  err(text: string): void;
  /** True when stderr is a terminal (progress bars). */
  isTerminal: boolean;
  /** The size of stdin when it is a regular file, else null (for the progress bar). */
  stdinBytes: number | null;
  /** The environment. */
  env: Record<string, string | undefined>;
  /** Resolves when the user asks the command to stop (SIGINT/SIGTERM). */
  stopRequested: Promise<void>;
}

/** The client commands, by name. */
export const CLIENT_COMMANDS = [
  "enqueue",
  "stats",
  "job",
  "dead",
  "queue",
  "consume",
  "schedule",
  "backup",
  "bulk",
  "flow",
  "group",
] as const;

/** Runs a client command; answers the exit code (0 ok, 1 failed, 2 usage error). */
export async function runClientCommand(
  command: (typeof CLIENT_COMMANDS)[number],
  args: string[],
  io: CommandIO,
): Promise<number> {
  try {
    switch (command) {
      case "enqueue":
        return await enqueueCommand(args, io);
      case "stats":
        return await statsCommand(args, io);
      case "job":
        return await jobCommand(args, io);
      case "dead":
        return await deadCommand(args, io);
      case "queue":
        return await queueCommand(args, io);
      case "consume":
        return await consumeCommand(args, io);
      case "schedule":
        return await scheduleCommand(args, io);
      case "backup":
        return await backupCommand(args, io);
      case "bulk":
        return await bulkCommand(args, io);
      case "flow":
        return await flowCommand(args, io);
      case "group":
        return await groupCommand(args, io);
    }
  } catch (error) {
    if (
      error instanceof ConfigError || error instanceof UsageError ||
      error instanceof ScheduleUsageError || error instanceof BackupUsageError ||
      error instanceof BulkUsageError || error instanceof FlowUsageError ||
      error instanceof GroupUsageError
    ) {
      io.err(`tegami ${command}: ${error.message}\n`);
      return 2;
    }
    if (error instanceof TegamiError) {
      io.err(`tegami ${command}: ${error.code}: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

class UsageError extends Error {}

function positionals(rest: string[], names: string[], optional = 0): string[] {
  if (rest.length < names.length - optional || rest.length > names.length) {
    throw new UsageError(`expected ${names.join(" ")}, got ${rest.length} arguments`);
  }
  return rest;
}

function integerFlag(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new UsageError(`--${name} expects an integer`);
  return n;
}

async function enqueueCommand(args: string[], io: CommandIO): Promise<number> {
  const { config, rest, values } = resolveClientConfig(args, io.env, {
    priority: { type: "string" },
    key: { type: "string" },
    "key-ttl": { type: "string" },
    "on-duplicate": { type: "string" },
    group: { type: "string" },
    delay: { type: "string" },
    "max-attempts": { type: "string" },
    "batch-size": { type: "string" },
    jobs: { type: "boolean" },
  });
  const [queue, json] = positionals(rest, ["QUEUE", "[JSON]"], 1);
  const client = new TegamiClient({ url: config.url, token: config.token ?? undefined });
  const options = {
    priority: integerFlag(values.priority, "priority"),
    key: values.key as string | undefined,
    keyTtlMs: durationFlag(values["key-ttl"], "key-ttl"),
    onDuplicate: values["on-duplicate"] as JobOptions["onDuplicate"],
    group: values.group as string | undefined,
    delayMs: durationFlag(values.delay, "delay"),
    maxAttempts: integerFlag(values["max-attempts"], "max-attempts"),
  };
  if (json !== undefined) {
    let payload: unknown;
    try {
      payload = JSON.parse(json);
    } catch {
      throw new UsageError(`JSON is not valid JSON: ${json.slice(0, 80)}`);
    }
    const answer = await client.enqueue(queue, payload, options);
    io.out(JSON.stringify(answer) + "\n");
    return 0;
  }
  if (options.key !== undefined) {
    throw new UsageError("--key applies to one job; with NDJSON use --jobs and a key per line");
  }
  if (options.keyTtlMs !== undefined || options.onDuplicate !== undefined) {
    throw new UsageError(
      "--key-ttl and --on-duplicate apply to one job with --key; with NDJSON use --jobs and " +
        "key_ttl_ms, on_duplicate per line",
    );
  }
  const summary = await enqueueStream(client, queue, io.stdin, {
    batchSize: integerFlag(values["batch-size"], "batch-size") ?? 500,
    linesAreJobs: values.jobs === true,
    defaults: options,
    progress: io.isTerminal ? (text) => io.err(`\r${text}`) : undefined,
    inputBytes: io.stdinBytes,
  });
  if (io.isTerminal) io.err("\n");
  io.out(summary.line + "\n");
  if (summary.failed && summary.lines === 0 && summary.sent === 0) {
    // `cat missing.ndjson | tegami enqueue q`: cat's error went by; say what this end saw.
    io.err(
      "tegami enqueue: read no jobs from stdin; pipe NDJSON (one payload per line) or give " +
        "the payload as an argument: tegami enqueue QUEUE JSON\n",
    );
  }
  return summary.failed ? 1 : 0;
}

async function statsCommand(args: string[], io: CommandIO): Promise<number> {
  const { config, rest, values } = resolveClientConfig(args, io.env, {
    json: { type: "boolean" },
  });
  const [queue] = positionals(rest, ["[QUEUE]"], 1);
  const client = new TegamiClient({ url: config.url, token: config.token ?? undefined });
  const queues = queue === undefined ? await client.queues() : [await client.stats(queue)];
  if (values.json === true) {
    io.out(JSON.stringify(queue === undefined ? { queues } : queues[0]) + "\n");
    return 0;
  }
  const header = ["queue", ...JOB_STATES, "oldest", "consumers"];
  const rows = queues.map((q) => [
    q.name + (q.paused ? " (paused)" : ""),
    ...JOB_STATES.map((s) => String(q.counts[s])),
    `${(q.oldest_pending_age_ms / 1000).toFixed(1)}s`,
    String(q.consumers),
  ]);
  io.out(textTable(header, rows));
  if (rows.length === 0) io.out("(no queues yet)\n");
  return 0;
}

/** The longest one wait of `GET /v1/jobs/{id}?wait_ms` (the server's long-poll limit). */
const WAIT_STEP_MS = 60_000;

/**
 * `tegami job ID [--wait DURATION]`: shows the job; with `--wait`, once it has ended (or when the
 * time runs out). Exit codes with `--wait`: 0 done, 1 dead or cancelled, 3 still not ended.
 */
async function jobCommand(args: string[], io: CommandIO): Promise<number> {
  const { config, rest, values } = resolveClientConfig(args, io.env, {
    wait: { type: "string" },
  });
  const [id] = positionals(rest, ["ID"]);
  const n = integerFlag(id, "ID");
  if (n === undefined || n < 1) throw new UsageError("ID must be a positive job id");
  const waitMs = durationFlag(values.wait, "wait");
  if (waitMs === undefined) {
    const client = new TegamiClient({ url: config.url, token: config.token ?? undefined });
    io.out(JSON.stringify(await client.get(n), null, 2) + "\n");
    return 0;
  }
  // The server waits at most a minute per call: a longer wait is several calls.
  const call = apiCaller(config);
  const until = Date.now() + waitMs;
  let job: JobInfo;
  try {
    for (;;) {
      const step = Math.max(0, Math.min(WAIT_STEP_MS, until - Date.now()));
      job = await call<JobInfo>("GET", `/v1/jobs/${n}?wait_ms=${step}`);
      if (ENDED.has(job.state) || step === 0 || Date.now() >= until) break;
    }
  } catch (error) {
    if (!(error instanceof ApiRefused)) throw error;
    io.err(`tegami job: ${error.message}\n`);
    return 1;
  }
  io.out(JSON.stringify(job, null, 2) + "\n");
  if (job.state === "done") return 0;
  if (ENDED.has(job.state)) return 1;
  io.err(`tegami job: job ${n} is still ${job.state} after ${values.wait}\n`);
  return 3;
}

/** The states in which a job has ended. */
const ENDED: ReadonlySet<string> = new Set(["done", "dead", "cancelled"]);

async function deadCommand(args: string[], io: CommandIO): Promise<number> {
  const { config, rest, values } = resolveClientConfig(args, io.env, {
    limit: { type: "string" },
    after: { type: "string" },
    ids: { type: "string" },
    json: { type: "boolean" },
  });
  const [action, queue] = positionals(rest, ["list|requeue", "QUEUE"]);
  const client = new TegamiClient({ url: config.url, token: config.token ?? undefined });
  if (action === "list") {
    const page = await client.listDead(queue, {
      limit: integerFlag(values.limit, "limit"),
      after: integerFlag(values.after, "after"),
    });
    if (values.json === true) {
      // NDJSON for pipes: stdout holds only jobs, so the empty case is said on stderr.
      for (const job of page.jobs) io.out(JSON.stringify(job) + "\n");
      if (page.jobs.length === 0) io.err(`no dead jobs in ${queue}\n`);
    } else {
      io.out(deadTable(page.jobs));
      if (page.jobs.length === 0) io.out(`(no dead jobs in ${queue})\n`);
    }
    if (page.next_after !== null) io.err(`more: --after ${page.next_after}\n`);
    return 0;
  }
  if (action === "requeue") {
    const ids = values.ids === undefined
      ? undefined
      : String(values.ids).split(",").map((s) => integerFlag(s.trim(), "ids")!);
    io.out(`requeued ${await client.requeueDead(queue, ids)} jobs\n`);
    return 0;
  }
  throw new UsageError(`expected list or requeue, got "${action}"`);
}

/** Dead jobs as a table: id, attempts, when each died, and the first line of its last error. */
function deadTable(jobs: JobInfo[]): string {
  const rows = jobs.map((job) => {
    const error = (job.last_error ?? "").split("\n")[0];
    return [
      String(job.id),
      `${job.attempts}/${job.max_attempts}`,
      job.finished_at === null ? "" : new Date(job.finished_at).toISOString(),
      error.length > 72 ? `${error.slice(0, 71)}…` : error,
    ];
  });
  return textTable(["id", "attempts", "died", "last_error"], rows, [
    "right",
    "right",
    "left",
    "left",
  ]);
}

/**
 * The flags of `tegami queue settings` that change a setting, by the setting. What the SQS API
 * keeps (`sqs_attributes`, `tags`) is its own to change, and a read-modify-write keeps it.
 */
const SETTING_FLAGS = {
  concurrency: "concurrency",
  rate: "rate",
  group_limit: "group-limit",
  max_attempts: "max-attempts",
  lease_ms: "lease",
  backoff: "backoff",
  retain_done_ms: "retain-done",
  retain_dead_ms: "retain-dead",
  retain_pending_ms: "retain-pending",
  dead_letter_queue: "dead-letter-queue",
} as const satisfies Record<Exclude<keyof QueueSettings, "sqs_attributes" | "tags">, string>;

/** A flag's text as a setting's value; `none` unsets it (null: the default). */
function settingValue(setting: keyof QueueSettings, flag: string, text: string): unknown {
  if (text === "none") return null;
  const duration = (value: string) => durationFlag(value, flag)!;
  switch (setting) {
    case "rate":
    case "dead_letter_queue":
      return text; // checked by the server, which names the field
    case "lease_ms":
    case "retain_done_ms":
    case "retain_dead_ms":
    case "retain_pending_ms":
      return duration(text);
    case "backoff": {
      const parts = text.split(",");
      if (parts.length !== 2) {
        throw new UsageError(`--backoff expects BASE,MAX such as 1s,1h (or none), got "${text}"`);
      }
      return { base_ms: duration(parts[0].trim()), max_ms: duration(parts[1].trim()) };
    }
    default:
      return integerFlag(text, flag);
  }
}

/** The settings as `tegami queue settings` prints them, one per line. */
function settingsLines(queue: string, settings: QueueSettings): string {
  const show = (value: unknown) =>
    value === null ? "none" : typeof value === "object" ? JSON.stringify(value) : String(value);
  const names = Object.keys(SETTING_FLAGS) as (keyof QueueSettings)[];
  const width = Math.max(...names.map((n) => n.length));
  return [`queue ${queue}`, ...names.map((n) => `  ${n.padEnd(width)}  ${show(settings[n])}`)]
    .join("\n") + "\n";
}

/**
 * `tegami queue settings QUEUE [--concurrency N …]`: without setting flags, shows the queue's
 * settings; with them, changes those and keeps the others (`--reset` starts from the defaults).
 */
async function queueCommand(args: string[], io: CommandIO): Promise<number> {
  const extra = Object.fromEntries(
    Object.values(SETTING_FLAGS).map((flag) => [flag, { type: "string" as const }]),
  );
  const { config, rest, values } = resolveClientConfig(args, io.env, {
    ...extra,
    reset: { type: "boolean" },
    json: { type: "boolean" },
  });
  const [action, queue] = positionals(rest, ["settings", "QUEUE"]);
  if (action !== "settings") throw new UsageError(`expected settings, got "${action}"`);
  const changes: Partial<Record<keyof QueueSettings, unknown>> = {};
  for (const [setting, flag] of Object.entries(SETTING_FLAGS) as [keyof QueueSettings, string][]) {
    const text = values[flag];
    if (text !== undefined) changes[setting] = settingValue(setting, flag, String(text));
  }
  const client = new TegamiClient({ url: config.url, token: config.token ?? undefined });
  const changing = values.reset === true || Object.keys(changes).length > 0;
  const settings = !changing
    ? await client.settings(queue)
    : values.reset === true
    ? await client.putSettings(queue, changes as Partial<QueueSettings>)
    : await client.updateSettings(queue, changes as Partial<QueueSettings>);
  io.out(values.json === true ? JSON.stringify(settings) + "\n" : settingsLines(queue, settings));
  return 0;
}

/** The last line of a failed command's stderr, for the console (`: …`), or nothing. */
function consoleTail(stderr: string): string {
  const last = stderr.split("\n").map((line) => line.trim()).filter((line) => line !== "").pop();
  if (last === undefined) return "";
  return `: ${last.length > 200 ? `${last.slice(0, 199)}…` : last}`;
}

async function consumeCommand(args: string[], io: CommandIO): Promise<number> {
  const { config, rest, values } = resolveClientConfig(args, io.env, {
    exec: { type: "string" },
    concurrency: { type: "string" },
    lease: { type: "string" },
  });
  const [queue] = positionals(rest, ["QUEUE"]);
  if (typeof values.exec !== "string" || values.exec === "") {
    throw new UsageError("--exec CMD is required: the command run for each job");
  }
  const command = values.exec;
  const concurrency = integerFlag(values.concurrency, "concurrency") ?? 1;
  const leaseMs = durationFlag(values.lease, "lease");
  // Before any job is taken: a command that cannot start would fail every job until it is dead.
  const problem = await execProblem(command);
  if (problem !== null) throw new UsageError(`Cannot run --exec: ${problem}`);
  const worker = consume(queue, async (payload, ctx) => {
    const child = new Deno.Command("sh", {
      args: ["-c", command],
      env: {
        TEGAMI_JOB_ID: String(ctx.id),
        TEGAMI_ATTEMPT: String(ctx.attempt),
        TEGAMI_QUEUE: queue,
      },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const kill = () => {
      try {
        child.kill("SIGTERM");
      } catch {
        // already exited
      }
    };
    ctx.signal.addEventListener("abort", kill, { once: true });
    const writer = child.stdin.getWriter();
    try {
      await writer.write(new TextEncoder().encode(JSON.stringify(payload)));
      await writer.close();
    } catch {
      // The command does not read its stdin: fine.
    }
    const output = await child.output();
    ctx.signal.removeEventListener("abort", kill);
    const stdout = new TextDecoder().decode(output.stdout).trim();
    if (output.code !== 0) {
      const tail = new TextDecoder().decode(output.stderr).trim().slice(-2000);
      io.err(`job ${ctx.id} attempt ${ctx.attempt}: exit ${output.code}${consoleTail(tail)}\n`);
      throw new JobFailure(tail === "" ? `exit code ${output.code}` : tail);
    }
    io.err(`job ${ctx.id} attempt ${ctx.attempt}: done\n`);
    if (stdout === "") return null;
    try {
      return JSON.parse(stdout);
    } catch {
      return stdout;
    }
  }, {
    url: config.url,
    token: config.token ?? undefined,
    concurrency,
    leaseMs,
    onError: (error) => io.err(`tegami consume: ${String(error)}\n`),
  });
  await worker.ready();
  io.err(`consuming ${queue} from ${config.url} (concurrency ${concurrency}); Ctrl-C to stop\n`);
  await io.stopRequested;
  io.err("stopping: waiting for running jobs\n");
  await worker.close();
  return 0;
}
