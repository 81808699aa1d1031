/**
 * `tegami schedule`: recurring jobs on a running server, through the client library.
 * `put NAME --queue Q --cron EXPR [--timezone TZ] [--missed last|all|none] [--payload JSON]
 * [--priority N] [--max-attempts N] [--lease 30s]`, `list [--json]`, `get NAME`, `delete NAME`,
 * `pause NAME`, `resume NAME`. `tegami schedule --help` teaches the syntax (config/help.ts).
 *
 * @module
 */

import { type MissedPolicy, type ScheduleInfo, TegamiClient } from "../client/mod.ts";
import { resolveClientConfig } from "../config/client_config.ts";
import { durationFlag } from "../config/flags.ts";

/** What the command needs from its caller (the client commands' IO, in part). */
export interface ScheduleIO {
  /** Writes to standard output. */
  out(text: string): void;
  /** The environment. */
  env: Record<string, string | undefined>;
}

/** A mistake in the command line (exit 2). */
export class ScheduleUsageError extends Error {}

/** The subcommands of `tegami schedule`. */
export const SCHEDULE_ACTIONS = ["put", "list", "get", "delete", "pause", "resume"] as const;

/** Runs `tegami schedule ARGS`; answers the exit code. Server errors are thrown as TegamiError. */
export async function scheduleCommand(args: string[], io: ScheduleIO): Promise<number> {
  const { config, rest, values } = resolveClientConfig(args, io.env, {
    queue: { type: "string" },
    cron: { type: "string" },
    timezone: { type: "string" },
    missed: { type: "string" },
    payload: { type: "string" },
    priority: { type: "string" },
    "max-attempts": { type: "string" },
    lease: { type: "string" },
    json: { type: "boolean" },
  });
  const [action, name, ...extra] = rest;
  if (!SCHEDULE_ACTIONS.includes(action as (typeof SCHEDULE_ACTIONS)[number])) {
    throw new ScheduleUsageError(
      `expected one of ${SCHEDULE_ACTIONS.join(", ")}, got ${
        action === undefined ? "nothing" : `"${action}"`
      } (see tegami schedule --help)`,
    );
  }
  if (extra.length > 0) throw new ScheduleUsageError(`unexpected argument "${extra[0]}"`);
  if (action === "list" ? name !== undefined : name === undefined) {
    throw new ScheduleUsageError(
      action === "list" ? `list takes no NAME, got "${name}"` : `${action} needs a NAME`,
    );
  }
  const client = new TegamiClient({ url: config.url, token: config.token ?? undefined });
  switch (action) {
    case "list": {
      const schedules = await client.schedules();
      if (values.json === true) io.out(JSON.stringify({ schedules }) + "\n");
      else io.out(table(schedules));
      return 0;
    }
    case "put": {
      const queue = required(values.queue, "queue", "the queue each tick's job goes to");
      const cron = required(values.cron, "cron", 'a cron expression such as "0 3 * * *"');
      let payload: unknown = null;
      if (values.payload !== undefined) {
        try {
          payload = JSON.parse(String(values.payload));
        } catch {
          throw new ScheduleUsageError(
            `--payload is not valid JSON: ${String(values.payload).slice(0, 80)}`,
          );
        }
      }
      const schedule = await client.putSchedule(name, {
        queue,
        cron,
        payload,
        timezone: values.timezone as string | undefined,
        missed: values.missed as MissedPolicy | undefined,
        priority: integer(values.priority, "priority"),
        maxAttempts: integer(values["max-attempts"], "max-attempts"),
        leaseMs: durationFlag(values.lease, "lease"),
      });
      io.out(JSON.stringify(schedule, null, 2) + "\n");
      return 0;
    }
    case "get":
      io.out(JSON.stringify(await client.getSchedule(name), null, 2) + "\n");
      return 0;
    case "delete":
      await client.deleteSchedule(name);
      io.out(`deleted schedule ${name}\n`);
      return 0;
    case "pause":
    case "resume": {
      const schedule = action === "pause"
        ? await client.pauseSchedule(name)
        : await client.resumeSchedule(name);
      io.out(
        action === "pause"
          ? `paused schedule ${name}\n`
          : `resumed schedule ${name}: next tick ${iso(schedule.next_tick_at)}\n`,
      );
      return 0;
    }
  }
  return 2;
}

function required(value: unknown, flag: string, what: string): string {
  if (typeof value !== "string" || value === "") {
    throw new ScheduleUsageError(`put needs --${flag}: ${what}`);
  }
  return value;
}

function integer(value: unknown, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new ScheduleUsageError(`--${flag} expects an integer`);
  return n;
}

function iso(at: number | null): string {
  return at === null ? "-" : new Date(at).toISOString();
}

/** The schedules as an aligned table: name, queue, cron, zone, next tick, last tick. */
function table(schedules: ScheduleInfo[]): string {
  if (schedules.length === 0) return "(no schedules)\n";
  const header = ["name", "queue", "cron", "timezone", "next tick", "last tick"];
  const rows = schedules.map((s) => [
    s.name + (s.paused ? " (paused)" : ""),
    s.queue,
    s.cron,
    s.timezone,
    iso(s.next_tick_at),
    iso(s.last_tick_at),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n") + "\n";
}
