/**
 * `tegami group`: the settings of a queue's ordering groups (docs/api.md, "Fair shares").
 * `list QUEUE [--after NAME] [--limit N]`, `show QUEUE GROUP`, `set QUEUE GROUP [--weight W]
 * [--concurrency N|none] [--rate R|none]` (a read-change-write: the settings not given are kept)
 * and `reset QUEUE GROUP`; `--json` prints the server's answers.
 *
 * Exit codes: 0 done, 1 the server refused or could not be reached, 2 a usage error.
 *
 * @module
 */

import type { GroupInfo, GroupSettings } from "../client/mod.ts";
import { resolveClientConfig } from "../config/client_config.ts";
import { type ApiCall, apiCaller, ApiRefused } from "./api_call.ts";
import { textTable } from "./table.ts";

/** What the command reads and writes: a part of the client commands' `CommandIO`. */
export interface GroupIO {
  /** Writes to standard output. */
  out(text: string): void;
  /** Writes to standard error. */
  err(text: string): void;
  /** The environment. */
  env: Record<string, string | undefined>;
}

/** A mistake in the command's arguments (exit code 2). */
export class GroupUsageError extends Error {}

/** The subcommands of `tegami group`. */
export const GROUP_ACTIONS = ["list", "show", "set", "reset"] as const;

/** The help text of `tegami group`. */
export function groupHelp(): string {
  return [
    "Usage: tegami group list QUEUE [--after NAME] [--limit N]",
    "       tegami group show QUEUE GROUP",
    "       tegami group set QUEUE GROUP [--weight W] [--concurrency N|none] [--rate R|none]",
    "       tegami group reset QUEUE GROUP",
    "",
    "Fair shares between the ordering groups of a queue (jobs enqueued with --group): each group",
    "may have its own weight, concurrency and rate. A group without settings has weight 1, the",
    "queue's group_limit and no rate of its own. The queue's concurrency and rate apply on top.",
    "",
    "Subcommands:",
    "  list    the groups with settings of their own or with jobs pending or leased, by name:",
    "          settings, jobs pending and leased, limit, and what holds the group back",
    "          (--limit N, 1 to 1000, default 100; --after NAME for the next page)",
    "  show    one group (a group nobody configured shows the defaults)",
    "  set     change the settings given and keep the others:",
    "            --weight W          share of turns among the queue's groups, 0.01 to 1000",
    "                                (default 1): weight 3 is served three jobs for each one",
    "                                of a group of weight 1",
    "            --concurrency N     most of its jobs leased at once, in place of the queue's",
    "                                group_limit; none: the queue's group_limit",
    "            --rate R            its own rate, such as 10/1s or 600/1m; none: no rate",
    "  reset   remove the group's settings: back to the defaults",
    "",
    "Flags:",
    "  --json  print the server's JSON answer (list: one group per line)",
    "",
    "Examples:",
    "  tegami group set emails acme --weight 3 --concurrency 2",
    "  tegami group set emails trial-42 --rate 10/1m",
    "  tegami group list emails",
    "  tegami group reset emails acme",
    "",
    "Reading needs any valid token, changing the admin scope (--token or TEGAMI_TOKEN); --url or",
    "TEGAMI_URL finds the server.",
    "",
  ].join("\n");
}

/** Runs `tegami group ARGS`; answers the exit code. */
export async function groupCommand(args: string[], io: GroupIO): Promise<number> {
  const { config, rest, values } = resolveClientConfig(args, io.env, {
    after: { type: "string" },
    limit: { type: "string" },
    weight: { type: "string" },
    concurrency: { type: "string" },
    rate: { type: "string" },
    json: { type: "boolean" },
  });
  const [action, queue, group, ...extra] = rest;
  if (!GROUP_ACTIONS.includes(action as (typeof GROUP_ACTIONS)[number])) {
    throw new GroupUsageError(
      `expected one of ${GROUP_ACTIONS.join(", ")}, got ${
        action === undefined ? "nothing" : `"${action}"`
      } (see tegami group --help)`,
    );
  }
  if (extra.length > 0) throw new GroupUsageError(`unexpected argument "${extra[0]}"`);
  if (queue === undefined) throw new GroupUsageError(`${action} needs a QUEUE`);
  if (action === "list" ? group !== undefined : group === undefined) {
    throw new GroupUsageError(
      action === "list" ? `list takes no GROUP, got "${group}"` : `${action} needs a GROUP`,
    );
  }
  const listOnly = ["after", "limit"].filter((name) => values[name] !== undefined);
  if (action !== "list" && listOnly.length > 0) {
    throw new GroupUsageError(`--${listOnly[0]} applies to list`);
  }
  const changes = settingChanges(values);
  if (action !== "set" && Object.keys(changes).length > 0) {
    throw new GroupUsageError(`--${Object.keys(changes)[0]} applies to set`);
  }
  const json = values.json === true;
  const call = apiCaller(config);
  try {
    if (action === "list") {
      return await listGroups(call, io, queue, values.after, values.limit, json);
    }
    const path = groupPath(queue, group);
    let state: GroupInfo;
    if (action === "show") state = await call<GroupInfo>("GET", path);
    else if (action === "reset") state = await call<GroupInfo>("DELETE", path);
    else {
      if (Object.keys(changes).length === 0) {
        throw new GroupUsageError("set needs --weight, --concurrency or --rate");
      }
      const current = await call<GroupInfo>("GET", path);
      const body = JSON.stringify({ ...current.settings, ...changes });
      state = await call<GroupInfo>("PUT", path, body);
    }
    io.out(json ? JSON.stringify(state) + "\n" : groupLines(queue, state));
    return 0;
  } catch (error) {
    if (!(error instanceof ApiRefused)) throw error;
    io.err(`tegami group: ${error.message}\n`);
    return 1;
  }
}

/** `tegami group list`: a table of the page, and the cursor of the next on stderr. */
async function listGroups(
  call: ApiCall,
  io: GroupIO,
  queue: string,
  after: unknown,
  limit: unknown,
  json: boolean,
): Promise<number> {
  const query = new URLSearchParams();
  if (limit !== undefined) {
    const text = String(limit);
    if (!/^[0-9]{1,4}$/.test(text)) {
      throw new GroupUsageError(`--limit expects an integer from 1 to 1000, got "${text}"`);
    }
    query.set("limit", text);
  }
  if (after !== undefined) query.set("after", String(after));
  const page = await call<{ groups: GroupInfo[]; next_after: string | null }>(
    "GET",
    `/v1/queues/${encodeURIComponent(queue)}/groups${query.size === 0 ? "" : `?${query}`}`,
  );
  if (json) {
    // NDJSON for pipes: stdout holds only groups, so the empty case is said on stderr.
    for (const group of page.groups) io.out(JSON.stringify(group) + "\n");
    if (page.groups.length === 0) io.err(`no groups in ${queue}\n`);
  } else if (page.groups.length === 0) io.out(`(no groups in ${queue})\n`);
  else io.out(listTable(page.groups));
  if (page.next_after !== null) io.err(`more: --after ${shellWord(page.next_after)}\n`);
  return 0;
}

/** The settings `set` changes, by member: from the flags given (`none` unsets one). */
function settingChanges(values: Record<string, unknown>): Partial<GroupSettings> {
  const changes: Partial<GroupSettings> = {};
  if (values.weight !== undefined) {
    const text = String(values.weight);
    const weight = Number(text);
    if (text === "none") changes.weight = 1;
    else if (text.trim() === "" || !Number.isFinite(weight)) {
      throw new GroupUsageError(`--weight expects a number such as 3 or 0.5, got "${text}"`);
    } else changes.weight = weight;
  }
  if (values.concurrency !== undefined) {
    const text = String(values.concurrency);
    if (text === "none") changes.concurrency = null;
    else if (!/^[0-9]{1,16}$/.test(text)) {
      throw new GroupUsageError(`--concurrency expects an integer or none, got "${text}"`);
    } else changes.concurrency = Number(text);
  }
  if (values.rate !== undefined) {
    const text = String(values.rate);
    changes.rate = text === "none" ? null : text; // checked by the server, which names the field
  }
  return changes;
}

/**
 * The path of a group. A path cannot name the groups `.` and `..`: URLs treat such a segment as
 * a step within the path, encoded or not, so the request would reach another route.
 */
function groupPath(queue: string, group: string): string {
  if (group === "." || group === "..") {
    throw new GroupUsageError(`a group named "${group}" cannot be named in a URL path`);
  }
  return `/v1/queues/${encodeURIComponent(queue)}/groups/${encodeURIComponent(group)}`;
}

/** A setting's value as the command shows it (`none` for null). */
function show(value: unknown): string {
  return value === null ? "none" : String(value);
}

/** What holds a group back, as the command shows it. */
function heldText(state: GroupInfo): string {
  if (state.held === null) return "-";
  if (state.held === "rate" && state.held_until !== null) {
    return `rate until ${new Date(state.held_until).toISOString()}`;
  }
  return state.held;
}

/** One group, a member per line. */
function groupLines(queue: string, state: GroupInfo): string {
  const rows: [string, string][] = [
    ["weight", show(state.settings.weight)],
    ["concurrency", show(state.settings.concurrency)],
    ["rate", show(state.settings.rate)],
    ["configured", state.configured ? "yes" : "no (the defaults)"],
    ["pending", String(state.pending)],
    ["leased", String(state.leased)],
    ["limit", String(state.limit)],
    ["held", heldText(state)],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  return [
    `group ${JSON.stringify(state.group)} of queue ${queue}`,
    ...rows.map(([name, value]) => `  ${name.padEnd(width)}  ${value}`),
  ].join("\n") + "\n";
}

/** The groups of a page as a table. */
function listTable(groups: GroupInfo[]): string {
  return textTable(
    ["group", "weight", "concurrency", "rate", "pending", "leased", "limit", "held"],
    groups.map((g) => [
      g.group,
      show(g.settings.weight),
      show(g.settings.concurrency),
      show(g.settings.rate),
      String(g.pending),
      String(g.leased),
      String(g.limit),
      heldText(g),
    ]),
    ["left", "right", "right", "right", "right", "right", "right", "left"],
  );
}

/** A name as one shell word: as it is when it is plain, else in single quotes. */
function shellWord(text: string): string {
  return /^[A-Za-z0-9_.:@%+=,/-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}
