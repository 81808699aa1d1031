/**
 * How the API shows what the store holds, shared by every transport and the live feed, so a
 * queue looks the same in `GET /v1/queues`, in the dashboard's event stream and anywhere else.
 *
 * @module
 */

import type { FlowCreated } from "../core/flow.ts";
import { groupSettingsView, type GroupState } from "../core/group_settings.ts";
import { type Job, jobJson } from "../core/job.ts";
import { settingsView } from "../core/queue_settings.ts";
import type { QueueCounts } from "../store/store.ts";

/**
 * What holds a queue's waiting jobs back from consumers that have credit: its `concurrency`
 * (as many jobs leased as it allows), its `rate` (this server's last claim found no token), or
 * nothing (null). Only while jobs are pending and someone consumes.
 */
export function heldBy(stats: QueueCounts, consumers: number): "concurrency" | "rate" | null {
  if (stats.counts.pending === 0 || consumers === 0) return null;
  const { concurrency } = stats.settings;
  if (concurrency !== null && stats.counts.leased >= concurrency) return "concurrency";
  if (stats.rate_held) return "rate";
  return null;
}

/**
 * A queue's stats as the API shows them: counts, pause, oldest pending age, consumers, its
 * settings, its ordering groups and the limit holding it back.
 */
export function statsView(stats: QueueCounts, now: number, consumers: number): unknown {
  return {
    name: stats.name,
    paused: stats.paused,
    counts: stats.counts,
    oldest_pending_age_ms: stats.oldest_pending_at === null
      ? 0
      : Math.max(0, now - stats.oldest_pending_at),
    consumers,
    settings: settingsView(stats.settings),
    groups: stats.groups,
    held: heldBy(stats, consumers),
  };
}

/**
 * An ordering group as the API shows it (`GET /v1/queues/{queue}/groups/{group}`): its name, its
 * settings (the rate as its canonical text), whether it has settings of its own, its jobs pending
 * and leased, its limit, and what holds it back.
 */
export function groupStateView(state: Readonly<GroupState>): Record<string, unknown> {
  return {
    group: state.group,
    settings: groupSettingsView(state.settings),
    configured: state.configured,
    pending: state.pending,
    leased: state.leased,
    limit: state.limit,
    held: state.held,
    held_until: state.held_until,
  };
}

/**
 * The answer to creating a flow or adding nodes to one: the flow's id, whether a flow holding
 * its key answered instead, and each node's job id by ref (`{"fetch": 101, …}`).
 */
export function flowCreatedView(created: FlowCreated): unknown {
  // Built with defineProperty semantics, so a ref such as "__proto__" is a member like any other.
  const jobs = Object.fromEntries(created.nodes.map((node) => [node.ref, node.id]));
  return { id: created.id, deduplicated: created.deduplicated, jobs };
}

/**
 * The JSON text of an enqueue's answer (`enqueueAnswer`'s, lib/api/requests.ts) after a wait: each entry of
 * a stored job gains `job`, the job as the wait left it (null if it was removed meanwhile).
 */
export function waitedEnqueueJson(
  answer: Record<string, unknown>,
  jobs: ReadonlyMap<number, Job | null>,
): string {
  const entry = (e: Record<string, unknown>): string => {
    const text = JSON.stringify(e);
    if (typeof e.id !== "number") return text;
    const job = jobs.get(e.id) ?? null;
    return `${text.slice(0, -1)},"job":${job === null ? "null" : jobJson(job)}}`;
  };
  if (!Array.isArray(answer.jobs)) return entry(answer);
  return `{"jobs":[${(answer.jobs as Record<string, unknown>[]).map(entry).join(",")}]}`;
}
