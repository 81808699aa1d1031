/**
 * The SQLite store's per-group settings and rate buckets (fair shares, core/group_settings.ts):
 * reading and writing a group's settings, showing groups, the queue's held groups for its stats,
 * and what its grouped claim needs of them. Runs inside the store's transactions.
 *
 * @module
 */

import type { DatabaseSync } from "node:sqlite";
import type { GroupSettings, GroupState } from "../../core/group_settings.ts";
import { isDefaultGroupSettings } from "../../core/group_settings.ts";
import {
  type BucketWrite,
  byCodePoint,
  GROUP_SETTINGS_COLUMNS,
  type GroupFacts,
  groupSettingsToRow,
  groupState,
  heldGroup,
} from "../group_row.ts";
import type { GroupCounts, HeldGroup } from "../store.ts";
import { CountedStatement, type StatementCount } from "./counted_statement.ts";

/** The settings columns and bucket of a group, as the queries below read them (`s`, `b`). */
const FACTS = `s.weight, s.stride, s.concurrency, s.rate_limit, s.rate_per_ms, b.held_until`;

function prepare(db: DatabaseSync, count: StatementCount) {
  const p = (sql: string) => new CountedStatement(db.prepare(sql), count);
  return {
    facts: p(
      `SELECT n.value AS grp, ${FACTS}, j.pending, j.leased
       FROM json_each(?2) n
       LEFT JOIN group_settings s ON s.queue = ?1 AND s.grp = n.value
       LEFT JOIN job_groups j ON j.queue = ?1 AND j.grp = n.value
       LEFT JOIN group_buckets b ON b.queue = ?1 AND b.grp = n.value`,
    ),
    liveNames: p(
      "SELECT grp FROM job_groups WHERE queue = ? AND grp > ? ORDER BY grp LIMIT ? + 0",
    ),
    configuredNames: p(
      "SELECT grp FROM group_settings WHERE queue = ? AND grp > ? ORDER BY grp LIMIT ? + 0",
    ),
    put: p(
      `INSERT OR REPLACE INTO group_settings
         (queue, grp, ${GROUP_SETTINGS_COLUMNS.join(", ")}, updated_at)
       VALUES (?, ?, ${GROUP_SETTINGS_COLUMNS.map(() => "?").join(", ")}, ?)`,
    ),
    remove: p("DELETE FROM group_settings WHERE queue = ? AND grp = ?"),
    removeBucket: p("DELETE FROM group_buckets WHERE queue = ? AND grp = ?"),
    summary: p(
      `SELECT count(*) AS configured, max(concurrency) AS most, count(rate_limit) AS rated
       FROM group_settings WHERE queue = ?`,
    ),
    writeTurn: p("UPDATE job_groups SET turn = ? WHERE queue = ? AND grp = ?"),
    writeBucket: p(
      `INSERT OR REPLACE INTO group_buckets (queue, grp, tokens, at, held_until)
       VALUES (?, ?, ?, ?, ?)`,
    ),
    // When the first group with jobs pending that its rate holds gets a token.
    nextToken: p(
      `SELECT min(b.held_until) AS at FROM group_buckets b
       JOIN job_groups j ON j.queue = b.queue AND j.grp = b.grp
       WHERE b.queue = ?1 AND b.held_until > ?2 AND j.pending > 0`,
    ),
    counts: p(
      `SELECT coalesce(sum(j.pending > 0), 0) AS waiting, coalesce(sum(j.leased > 0), 0) AS leased,
         coalesce(sum(j.pending > 0 AND j.leased >= coalesce(s.concurrency, ?2)), 0) AS full,
         coalesce(sum(j.pending > 0 AND j.leased < coalesce(s.concurrency, ?2)
           AND s.rate_limit IS NOT NULL AND b.held_until > ?3), 0) AS rate_held
       FROM job_groups j
       LEFT JOIN group_settings s ON s.queue = j.queue AND s.grp = j.grp
       LEFT JOIN group_buckets b ON b.queue = j.queue AND b.grp = j.grp
       WHERE j.queue = ?1`,
    ),
    topHeld: p(
      `SELECT j.grp, ${FACTS}, j.pending, j.leased
       FROM job_groups j
       LEFT JOIN group_settings s ON s.queue = j.queue AND s.grp = j.grp
       LEFT JOIN group_buckets b ON b.queue = j.queue AND b.grp = j.grp
       WHERE j.queue = ?1 AND j.pending > 0 AND (j.leased >= coalesce(s.concurrency, ?2)
         OR (s.rate_limit IS NOT NULL AND b.held_until > ?3))
       ORDER BY j.pending DESC, j.grp LIMIT 5`,
    ),
  };
}

/** What the grouped claim needs to know of a queue's group settings. */
export interface GroupSummary {
  /** Whether any group of the queue has settings. */
  configured: boolean;
  /** The largest `concurrency` among them (0 without any). */
  most: number;
  /** Whether any has a rate. */
  rated: boolean;
}

/** The group settings and buckets of one SQLite store. */
export class SqliteGroups {
  readonly #s: ReturnType<typeof prepare>;
  /** Per queue, its summary as last read; forgotten at every change of the queue's settings. */
  readonly #summaries = new Map<string, GroupSummary>();

  /** Prepares the statements (counted into `count`). */
  constructor(db: DatabaseSync, count: StatementCount) {
    this.#s = prepare(db, count);
  }

  /** The groups named, in that order, in a queue whose `group_limit` is `groupLimit`. */
  states(queue: string, groups: string[], groupLimit: number, now: number): GroupState[] {
    const rows = this.#s.facts.all(queue, JSON.stringify(groups)) as unknown as GroupFacts[];
    const byName = new Map(rows.map((row) => [row.grp, row]));
    return groups.map((group) => groupState(byName.get(group)!, groupLimit, now));
  }

  /** The names of the queue's groups with settings or jobs after `after`, at most `limit`. */
  names(queue: string, after: string | null, limit: number): string[] {
    const from = after ?? "";
    const names = new Set<string>();
    for (const statement of [this.#s.liveNames, this.#s.configuredNames]) {
      for (const row of statement.all(queue, from, limit) as { grp: string }[]) names.add(row.grp);
    }
    return [...names].sort(byCodePoint).slice(0, limit);
  }

  /** Replaces a group's settings (null or the defaults remove them and its bucket). */
  put(queue: string, group: string, settings: GroupSettings | null, now: number): void {
    this.#summaries.delete(queue);
    if (settings === null || isDefaultGroupSettings(settings)) {
      this.#s.remove.run(queue, group);
      this.#s.removeBucket.run(queue, group);
      return;
    }
    const row = groupSettingsToRow(settings);
    this.#s.put.run(queue, group, ...GROUP_SETTINGS_COLUMNS.map((c) => row[c]), now);
    if (settings.rate === null) this.#s.removeBucket.run(queue, group);
  }

  /**
   * Forgets what is known of the queues' settings (a transaction that may have changed them
   * was undone).
   */
  forget(): void {
    this.#summaries.clear();
  }

  /** What the grouped claim needs to know of the queue's group settings. */
  summary(queue: string): GroupSummary {
    let summary = this.#summaries.get(queue);
    if (summary === undefined) {
      const row = this.#s.summary.get(queue) as {
        configured: number;
        most: number | null;
        rated: number;
      };
      summary = { configured: row.configured > 0, most: row.most ?? 0, rated: row.rated > 0 };
      this.#summaries.set(queue, summary);
    }
    return summary;
  }

  /** Writes the turns of the groups a claim of `queue` served (see servedTurns). */
  writeTurns(queue: string, turns: Map<string, number>): void {
    for (const [grp, turn] of turns) this.#s.writeTurn.run(turn, queue, grp);
  }

  /** Writes the buckets a claim of `queue` left at `now`. */
  writeBuckets(queue: string, buckets: BucketWrite[], now: number): void {
    for (const b of buckets) this.#s.writeBucket.run(queue, b.grp, b.tokens, now, b.held_until);
  }

  /** When the first of the queue's groups held by its rate with jobs pending gets a token. */
  nextToken(queue: string, now: number): number | null {
    const row = this.#s.nextToken.get(queue, now) as { at: number | null };
    return row.at;
  }

  /** The queue's groups counted, with its held groups that have the most jobs pending. */
  counts(queue: string, groupLimit: number, now: number): GroupCounts {
    const row = this.#s.counts.get(queue, groupLimit, now) as unknown as GroupCounts;
    const top = this.#s.topHeld.all(queue, groupLimit, now) as unknown as GroupFacts[];
    return {
      waiting: row.waiting,
      leased: row.leased,
      full: row.full,
      rate_held: row.rate_held,
      top_held: top.map((f) => heldGroup(groupState(f, groupLimit, now)))
        .filter((h): h is HeldGroup => h !== null),
    };
  }
}
