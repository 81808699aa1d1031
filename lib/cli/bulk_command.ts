/**
 * `tegami bulk`: act on every job of a queue that a filter takes (requeue, cancel, delete,
 * replay) through the server's bulk actions, `POST /v1/queues/{queue}/bulk`. Without `--run` it
 * only counts (a dry run): the command says what the action would take, and how to run it.
 * With `--run` it starts the task, shows its progress, and stops it on Ctrl-C.
 *
 * Exit codes: 0 done (or counted), 1 the server refused or the task failed or was stopped, 2 a
 * usage error.
 *
 * @module
 */

import { resolveClientConfig } from "../config/client_config.ts";
import { durationFlag } from "../config/flags.ts";
import { BULK_ACTIONS, type BulkActionName, type BulkTask } from "../core/bulk_actions.ts";
import { textTable } from "./table.ts";

/** What the command reads and writes: a part of the client commands' `CommandIO`. */
export interface BulkIO {
  /** Writes to standard output. */
  out(text: string): void;
  /** Writes to standard error. */
  err(text: string): void;
  /** True when stderr is a terminal (progress). */
  isTerminal: boolean;
  /** The environment. */
  env: Record<string, string | undefined>;
  /** Resolves when the user asks the command to stop (SIGINT/SIGTERM). */
  stopRequested: Promise<void>;
  /** The time, ms since the epoch (for `--finished-since 1h`). @default Date.now */
  now?: () => number;
}

/** A mistake in the command's arguments (exit code 2). */
export class BulkUsageError extends Error {}

/** How often a running task is asked for its progress (ms). */
const POLL_MS = 250;

/** The help text of `tegami bulk`. */
export function bulkHelp(): string {
  return [
    "Usage: tegami bulk <requeue|cancel|delete|replay> QUEUE [filter flags] [--run]",
    "       tegami bulk list | show ID | stop ID",
    "",
    "Acts on every job of QUEUE that the filter takes, as a background task on the server that",
    "works in short steps, so the server keeps serving meanwhile. Without --run it only counts",
    "(a dry run) and changes nothing: check the count, then run the same command with --run.",
    "",
    "Actions:",
    "  requeue   dead jobs become pending again, attempts reset",
    "  cancel    blocked, pending, delayed and leased jobs become cancelled (a lease is revoked",
    "            and its consumer told)",
    "  delete    jobs in any state are removed (a leased one's lease is revoked first)",
    "  replay    each finished job (done, dead, cancelled) is enqueued again as a fresh job:",
    "            same payload, attributes, priority and group, no key; the original stays",
    "",
    "Filter flags (every one given must hold; none: every job the action takes):",
    "  --state S[,S]          only these states: blocked pending delayed leased done dead",
    "                         cancelled",
    "  --created-since 1h     created within the last hour (also 30m, 7d, …)",
    "  --created-from TIME    created at or after TIME (ISO 8601 or ms since the epoch)",
    "  --created-to TIME      created before TIME",
    "  --finished-since 1h    finished (done, dead, cancelled) within the last hour",
    "  --finished-from TIME   finished at or after TIME",
    "  --finished-to TIME     finished before TIME",
    "  --error TEXT           the last error contains TEXT (case-sensitive)",
    "  --group G              in ordering group G",
    "  --key-prefix P         the job's key starts with P",
    "  --payload PATH=VALUE   the payload holds VALUE at PATH: members joined by dots, a number",
    "                         takes an array element (tenant.id=acme, items.0.sku=A1); VALUE is",
    '                         read as JSON when it is JSON (42, true, "42", {"a":1}), else as text',
    "",
    "Other flags:",
    "  --run      do it (without: count only)",
    "  --json     print the task as JSON",
    "",
    "Subcommands:",
    "  list       the bulk actions the server keeps: who ran what, when, with what counts",
    "  show ID    one of them",
    "  stop ID    stop a running one after its current step (what it did stays done)",
    "",
    "Examples:",
    "  tegami bulk replay billing --state dead --finished-since 1h        # count",
    "  tegami bulk replay billing --state dead --finished-since 1h --run  # replay them",
    "  tegami bulk cancel billing --payload tenant.id=acme --run",
    "  tegami bulk delete imports --key-prefix flood: --created-since 30m --run",
    "",
    "Needs a token with the admin scope (--token or TEGAMI_TOKEN); --url or TEGAMI_URL finds",
    "the server.",
    "",
  ].join("\n");
}

function time(value: unknown, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  const ms = /^[0-9]+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isSafeInteger(ms) || ms < 0) {
    throw new BulkUsageError(`--${flag} expects ISO 8601 or ms since the epoch, got "${text}"`);
  }
  return ms;
}

function payloadFlag(value: unknown): { path: string; equals: unknown } | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  const at = text.indexOf("=");
  if (at <= 0) throw new BulkUsageError(`--payload expects PATH=VALUE, got "${text}"`);
  const raw = text.slice(at + 1);
  let equals: unknown = raw;
  try {
    equals = JSON.parse(raw);
  } catch {
    // Not JSON: the text itself.
  }
  return { path: text.slice(0, at), equals };
}

/** The filter the flags describe, as the API takes it. */
function filterOf(values: Record<string, unknown>, now: number): Record<string, unknown> {
  const since = (flag: string) => {
    const ms = durationFlag(values[flag], flag);
    return ms === undefined ? undefined : now - ms;
  };
  const latest = (a: number | undefined, b: number | undefined) =>
    a === undefined ? b : b === undefined ? a : Math.max(a, b);
  const filter: Record<string, unknown> = {
    states: values.state === undefined ? undefined : String(values.state).split(","),
    created_from: latest(since("created-since"), time(values["created-from"], "created-from")),
    created_to: time(values["created-to"], "created-to"),
    finished_from: latest(since("finished-since"), time(values["finished-from"], "finished-from")),
    finished_to: time(values["finished-to"], "finished-to"),
    error_contains: values.error,
    group: values.group,
    key_prefix: values["key-prefix"],
    payload: payloadFlag(values.payload),
  };
  for (const key of Object.keys(filter)) if (filter[key] === undefined) delete filter[key];
  return filter;
}

class Refused extends Error {}

/** Runs `tegami bulk`; answers the exit code. */
export async function bulkCommand(args: string[], io: BulkIO): Promise<number> {
  const { config, rest, values } = resolveClientConfig(args, io.env, {
    state: { type: "string" },
    "created-since": { type: "string" },
    "created-from": { type: "string" },
    "created-to": { type: "string" },
    "finished-since": { type: "string" },
    "finished-from": { type: "string" },
    "finished-to": { type: "string" },
    error: { type: "string" },
    group: { type: "string" },
    "key-prefix": { type: "string" },
    payload: { type: "string" },
    run: { type: "boolean" },
    json: { type: "boolean" },
  });
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (config.token !== null) headers.authorization = `Bearer ${config.token}`;
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    let response: Response;
    try {
      response = await fetch(`${config.url}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      throw new Refused(`Cannot reach ${config.url}: ${(error as Error).message}`);
    }
    const answer = await response.json().catch(() => null);
    if (!response.ok) {
      const error = answer?.error;
      throw new Refused(
        error === undefined ? `HTTP ${response.status}` : `${error.code}: ${String(error.message)}`,
      );
    }
    return answer as T;
  };
  const [what, arg, ...extra] = rest;
  if (extra.length > 0) throw new BulkUsageError(`unexpected argument "${extra[0]}"`);
  const json = values.json === true;
  try {
    if (what === "list") {
      if (arg !== undefined) throw new BulkUsageError(`unexpected argument "${arg}"`);
      const { tasks } = await call<{ tasks: BulkTask[] }>("GET", "/v1/bulk");
      if (json) { for (const task of tasks) io.out(JSON.stringify(task) + "\n"); }
      else io.out(listTable(tasks));
      return 0;
    }
    if (what === "show" || what === "stop") {
      if (arg === undefined || !/^[0-9]+$/.test(arg)) {
        throw new BulkUsageError(`expected ${what} ID, the task's number`);
      }
      const task = await call<BulkTask>(what === "show" ? "GET" : "DELETE", `/v1/bulk/${arg}`);
      io.out(json ? JSON.stringify(task) + "\n" : taskLines(task));
      return 0;
    }
    if (!BULK_ACTIONS.includes(what as BulkActionName)) {
      throw new BulkUsageError(
        `expected ${BULK_ACTIONS.join(", ")}, list, show or stop; got "${what ?? ""}"`,
      );
    }
    if (arg === undefined) throw new BulkUsageError(`expected ${what} QUEUE`);
    const action = what as BulkActionName;
    const run = values.run === true;
    const filter = filterOf(values, (io.now ?? Date.now)());
    let task = await call<BulkTask>("POST", `/v1/queues/${encodeURIComponent(arg)}/bulk`, {
      filter,
      action,
      dry_run: !run,
    });
    let stopping = false;
    io.stopRequested.then(() => stopping = true);
    while (task.state === "running") {
      if (io.isTerminal) io.err(`\r${progressLine(task)}`);
      await new Promise((done) => setTimeout(done, POLL_MS));
      if (stopping && task.cancelled_by === null) {
        task = await call<BulkTask>("DELETE", `/v1/bulk/${task.id}`);
      } else task = await call<BulkTask>("GET", `/v1/bulk/${task.id}`);
    }
    if (io.isTerminal) io.err(`\r${progressLine(task)}\n`);
    if (json) io.out(JSON.stringify(task) + "\n");
    else if (!run) {
      io.out(
        `would ${action} ${task.matched} jobs of queue ${task.queue} ` +
          `(${task.examined} examined); nothing changed: add --run to do it\n`,
      );
    } else io.out(taskLines(task));
    return task.state === "done" ? 0 : 1;
  } catch (error) {
    if (!(error instanceof Refused)) throw error;
    if (io.isTerminal) io.err("\n");
    io.err(`tegami bulk: ${error.message}\n`);
    return 1;
  }
}

/** `replay: 1200 of 5000 examined, 300 matched, 300 done`, for a terminal. */
function progressLine(task: BulkTask): string {
  return `${task.dry_run ? "counting" : task.action}: ${task.examined} examined, ` +
    `${task.matched} matched, ${task.done} done   `;
}

function iso(ms: number | null): string {
  return ms === null ? "-" : new Date(ms).toISOString();
}

/** A task, one fact per line. */
function taskLines(task: BulkTask): string {
  const filter = Object.entries(task.filter).filter(([, v]) => v !== null)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(" ");
  return [
    `bulk ${task.id}: ${task.action}${task.dry_run ? " (dry run)" : ""} on ${task.queue}: ` +
    task.state,
    `  filter     ${filter}`,
    `  by         ${task.by}${
      task.cancelled_by === null ? "" : `, stopped by ${task.cancelled_by}`
    }`,
    `  counts     ${task.examined} examined, ${task.matched} matched, ${task.done} done, ` +
    `${task.skipped} skipped`,
    `  started    ${iso(task.started_at)}`,
    `  ended      ${iso(task.ended_at)}`,
    ...(task.error === null ? [] : [`  error      ${task.error}`]),
  ].join("\n") + "\n";
}

function listTable(tasks: BulkTask[]): string {
  if (tasks.length === 0) return "no bulk actions\n";
  return textTable(
    ["ID", "QUEUE", "ACTION", "STATE", "MATCHED", "DONE", "BY", "STARTED"],
    tasks.map((t) => [
      String(t.id),
      t.queue,
      t.action + (t.dry_run ? " (dry run)" : ""),
      t.state,
      String(t.matched),
      String(t.done),
      t.by,
      iso(t.started_at),
    ]),
    ["right", "left", "left", "left", "right", "right", "left", "left"],
  );
}
