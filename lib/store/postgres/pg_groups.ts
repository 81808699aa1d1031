/**
 * The PostgreSQL store's per-group settings and rate buckets (fair shares,
 * core/group_settings.ts): reading and writing a group's settings, showing groups, the queues'
 * held groups for their stats, and the grouped claim's candidates and buckets. No cache: several
 * servers share the tables, so each reads what it applies in its own transaction.
 *
 * @module
 */

import type { GroupSettings, GroupState } from "../../core/group_settings.ts";
import { isDefaultGroupSettings } from "../../core/group_settings.ts";
import {
  type BucketWrite,
  byCodePoint,
  type CandidateGroup,
  type GroupFacts,
  groupSettingsToRow,
  groupState,
  heldGroup,
} from "../group_row.ts";
import type { Candidate } from "../claim_order.ts";
import type { GroupCounts, HeldGroup } from "../store.ts";
import type { Sql, TxSql } from "./pg_driver.ts";
import { countPending } from "./pg_statements.ts";

/** The named groups of `queue`, in that order, as `sql` sees them at `now`. */
export async function groupStates(
  sql: Sql | TxSql,
  queue: string,
  names: string[],
  now: number,
): Promise<GroupState[]> {
  const [rows, limits] = await Promise.all([
    sql<GroupFacts[]>`
      SELECT n.grp, s.weight, s.stride, s.concurrency, s.rate_limit, s.rate_per_ms,
        b.held_until, j.pending, j.leased
      FROM unnest(${names}::text[]) AS n(grp)
      LEFT JOIN group_settings s ON s.queue = ${queue} AND s.grp = n.grp
      LEFT JOIN job_groups j ON j.queue = ${queue} AND j.grp = n.grp
      LEFT JOIN group_buckets b ON b.queue = ${queue} AND b.grp = n.grp`,
    sql<{ group_limit: number }[]>`
      SELECT group_limit FROM queue_settings WHERE name = ${queue}`,
  ]);
  const groupLimit = limits.length === 0 ? 1 : limits[0].group_limit;
  const byName = new Map(rows.map((row) => [row.grp, row]));
  return names.map((name) => groupState(byName.get(name)!, groupLimit, now));
}

/** The names of the queue's groups with settings or jobs after `after`, at most `limit`. */
export async function groupNames(
  sql: Sql,
  queue: string,
  after: string | null,
  limit: number,
): Promise<string[]> {
  const from = after ?? "";
  // Byte order ("C", as SQLite's), whatever the database's collation: a listing is rare, and
  // the tables keep the collation of jobs.grp for the claim's joins.
  const [live, configured] = await Promise.all([
    sql<{ grp: string }[]>`
      SELECT grp FROM job_groups WHERE queue = ${queue} AND grp COLLATE "C" > ${from}
      ORDER BY grp COLLATE "C" LIMIT ${limit}`,
    sql<{ grp: string }[]>`
      SELECT grp FROM group_settings WHERE queue = ${queue} AND grp COLLATE "C" > ${from}
      ORDER BY grp COLLATE "C" LIMIT ${limit}`,
  ]);
  const names = new Set([...live, ...configured].map((row) => row.grp));
  return [...names].sort(byCodePoint).slice(0, limit);
}

/** Replaces a group's settings inside `tx` (null or the defaults remove them and its bucket). */
export async function writeGroupSettings(
  tx: TxSql,
  queue: string,
  group: string,
  settings: GroupSettings | null,
  now: number,
): Promise<void> {
  if (settings === null || isDefaultGroupSettings(settings)) {
    await tx`DELETE FROM group_settings WHERE queue = ${queue} AND grp = ${group}`;
    await tx`DELETE FROM group_buckets WHERE queue = ${queue} AND grp = ${group}`;
    return;
  }
  const row = { queue, grp: group, ...groupSettingsToRow(settings), updated_at: now };
  await tx`
    INSERT INTO group_settings ${tx(row)}
    ON CONFLICT (queue, grp) DO UPDATE SET weight = excluded.weight, stride = excluded.stride,
      concurrency = excluded.concurrency, rate_limit = excluded.rate_limit,
      rate_per_ms = excluded.rate_per_ms, updated_at = excluded.updated_at`;
  if (settings.rate === null) {
    await tx`DELETE FROM group_buckets WHERE queue = ${queue} AND grp = ${group}`;
  }
}

/** Every queue's groups counted (or `queue`'s), with its held groups, by queue name. */
export async function groupCounts(
  sql: Sql,
  queue: string | undefined,
  now: number,
): Promise<Map<string, GroupCounts>> {
  const all = queue === undefined;
  const [counts, held] = await Promise.all([
    sql<(Omit<GroupCounts, "top_held"> & { queue: string })[]>`
      SELECT j.queue, count(*) FILTER (WHERE j.pending > 0)::int AS waiting,
        count(*) FILTER (WHERE j.leased > 0)::int AS leased,
        count(*) FILTER (WHERE j.pending > 0
          AND j.leased >= coalesce(s.concurrency, q.group_limit, 1))::int AS full,
        count(*) FILTER (WHERE j.pending > 0
          AND j.leased < coalesce(s.concurrency, q.group_limit, 1)
          AND s.rate_limit IS NOT NULL AND b.held_until > ${now})::int AS rate_held
      FROM job_groups j
      LEFT JOIN queue_settings q ON q.name = j.queue
      LEFT JOIN group_settings s ON s.queue = j.queue AND s.grp = j.grp
      LEFT JOIN group_buckets b ON b.queue = j.queue AND b.grp = j.grp
      WHERE ${all} OR j.queue = ${queue ?? ""}
      GROUP BY j.queue`,
    sql<(GroupFacts & { queue: string; group_limit: number })[]>`
      SELECT * FROM (
        SELECT j.queue, j.grp, s.weight, s.stride, s.concurrency, s.rate_limit, s.rate_per_ms,
          b.held_until, j.pending, j.leased, coalesce(q.group_limit, 1) AS group_limit,
          row_number() OVER (PARTITION BY j.queue ORDER BY j.pending DESC, j.grp) AS place
        FROM job_groups j
        LEFT JOIN queue_settings q ON q.name = j.queue
        LEFT JOIN group_settings s ON s.queue = j.queue AND s.grp = j.grp
        LEFT JOIN group_buckets b ON b.queue = j.queue AND b.grp = j.grp
        WHERE (${all} OR j.queue = ${queue ?? ""}) AND j.pending > 0
          AND (j.leased >= coalesce(s.concurrency, q.group_limit, 1)
            OR (s.rate_limit IS NOT NULL AND b.held_until > ${now}))
      ) h WHERE place <= 5 ORDER BY queue, place`,
  ]);
  const out = new Map<string, GroupCounts>();
  for (const { queue: name, ...counted } of counts) out.set(name, { ...counted, top_held: [] });
  for (const row of held) {
    const found = heldGroup(groupState(row, row.group_limit, now));
    if (found !== null) out.get(row.queue)?.top_held.push(found as HeldGroup);
  }
  return out;
}

/** What the grouped claim's first statement read. */
export interface GroupedCandidates {
  /** Whether the queue has a concurrency or a rate (and the claim was guarded): none read. */
  limited: boolean;
  /** Whether the queue has group rows. */
  grouped: boolean;
  /** Its pending jobs counted, as `countPending` (0 when not asked). */
  pending: number;
  /** Whether any of its groups has a rate. */
  rated: boolean;
  /** Its groups' largest turn. */
  front: number;
  /** Its queue's `group_limit`. */
  groupLimit: number;
  /** The groups' candidates, a group's rows together, with their groups. */
  groupRows: (Candidate & CandidateGroup)[];
  /** The ungrouped candidates, by priority then id. */
  ungrouped: Candidate[];
}

/** A row of {@linkcode groupedCandidates}. */
export type CandidateRow = Partial<Candidate & CandidateGroup> & {
  limited: boolean;
  grouped: boolean;
  pending: number;
  rated: boolean;
  front: number;
  group_limit: number;
  kind: "g" | "u" | null;
};

/**
 * The statement reading the candidates of a grouped claim of up to `total` jobs of `queue` (see claimOrder,
 * lib/store/claim_order.ts), locked: each group with pending jobs and a free slot and not held
 * by its rate at `now`, served longest ago first, at most `total`, with its settings and
 * bucket, and its first pending jobs by priority then id, as many as its free slots; and the
 * first `total` ungrouped jobs. Locking the groups' rows (SKIP LOCKED: a group another server is
 * claiming from waits for the next claim) keeps servers claiming at once within a group's
 * limits. `guarded`: read nothing if the queue has a concurrency or a rate. `count`: count up to
 * that many pending jobs (see countPending). Not yet sent (see inIndexOrder); its rows go to
 * {@linkcode readCandidates}.
 */
export function groupedCandidates(
  tx: TxSql,
  queue: string,
  total: number,
  now: number,
  guarded: boolean,
  count: number,
): Promise<CandidateRow[]> {
  return tx<CandidateRow[]>`
    WITH s AS (
      SELECT coalesce((SELECT group_limit FROM queue_settings WHERE name = ${queue}), 1)
          AS group_limit,
        ${guarded}::boolean AND EXISTS (SELECT 1 FROM queue_settings WHERE name = ${queue}
          AND (concurrency IS NOT NULL OR rate_limit IS NOT NULL)) AS limited,
        EXISTS (SELECT 1 FROM queues WHERE name = ${queue} AND paused) AS paused,
        EXISTS (SELECT 1 FROM job_groups WHERE queue = ${queue}) AS grouped,
        EXISTS (SELECT 1 FROM group_settings WHERE queue = ${queue} AND rate_limit IS NOT NULL)
          AS rated,
        (SELECT coalesce(max(turn), 0) FROM job_groups WHERE queue = ${queue}) AS front,
        ${countPending(tx, queue, count)} AS pending
    ), g AS (
      SELECT j.grp, j.turn, j.leased, st.weight, st.stride, st.concurrency, st.rate_limit,
        st.rate_per_ms, b.tokens, b.at
      FROM job_groups j
      LEFT JOIN group_settings st ON st.queue = j.queue AND st.grp = j.grp
      LEFT JOIN group_buckets b ON b.queue = j.queue AND b.grp = j.grp
      WHERE j.queue = ${queue} AND j.pending > 0
        AND j.leased < coalesce(st.concurrency, (SELECT group_limit FROM s))
        AND coalesce(b.held_until, 0) <= ${now}
        AND NOT (SELECT limited OR paused FROM s)
      ORDER BY j.turn LIMIT ${total}
      FOR UPDATE OF j SKIP LOCKED
    ), c AS (
      SELECT 'g' AS kind, x.id, x.priority, g.* FROM g CROSS JOIN LATERAL (
        SELECT id, priority FROM jobs
        WHERE queue = ${queue} AND state = 'pending' AND grp = g.grp
        ORDER BY priority DESC, id
        LIMIT least(coalesce(g.concurrency, (SELECT group_limit FROM s)) - g.leased,
          ${total}::int)
        FOR UPDATE SKIP LOCKED
      ) x
      UNION ALL
      SELECT 'u', u.id, u.priority, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
      FROM (
        SELECT id, priority FROM jobs
        WHERE queue = ${queue} AND state = 'pending' AND grp IS NULL
          AND NOT (SELECT limited OR paused FROM s)
        ORDER BY priority DESC, id
        LIMIT ${total}
        FOR UPDATE SKIP LOCKED
      ) u
    )
    -- One row at least, so that "limited" and "grouped" are heard when nothing was read.
    SELECT c.*, s.limited, s.grouped, s.pending, s.rated, s.front, s.group_limit
    FROM s LEFT JOIN c ON true`;
}

/** What {@linkcode groupedCandidates} read. */
export function readCandidates(rows: CandidateRow[]): GroupedCandidates {
  const first = rows[0];
  const grouped: (Candidate & CandidateGroup)[] = [];
  const ungrouped: Candidate[] = [];
  for (const row of rows) {
    if (row.kind === "u") {
      ungrouped.push({ id: Number(row.id), priority: row.priority! });
    } else if (row.kind === "g") {
      grouped.push({
        ...row,
        id: Number(row.id),
        priority: row.priority!,
        grp: row.grp!,
        turn: Number(row.turn),
        leased: row.leased!,
        tokens: row.tokens ?? null,
        at: row.at == null ? null : Number(row.at),
      });
    }
  }
  // The statement's rows come as the union made them: each group's together, by priority, id.
  grouped.sort((a, b) =>
    a.turn - b.turn || byCodePoint(a.grp, b.grp) || b.priority - a.priority || a.id - b.id
  );
  ungrouped.sort((a, b) => b.priority - a.priority || a.id - b.id);
  return {
    limited: first.limited,
    grouped: first.grouped,
    pending: first.pending,
    rated: first.rated,
    front: Number(first.front),
    groupLimit: first.group_limit,
    groupRows: grouped,
    ungrouped,
  };
}

/** Writes the buckets a claim of `queue` left at `now`. */
export async function writeGroupBuckets(
  tx: TxSql,
  queue: string,
  buckets: BucketWrite[],
  now: number,
): Promise<void> {
  if (buckets.length === 0) return;
  await tx`
    INSERT INTO group_buckets AS t (queue, grp, tokens, at, held_until)
    SELECT ${queue}, b.grp, b.tokens, ${now}, b.held_until
    FROM unnest(${buckets.map((b) => b.grp)}::text[], ${buckets.map((b) => b.tokens)}::float8[],
      ${buckets.map((b) => b.held_until)}::bigint[]) AS b(grp, tokens, held_until)
    ON CONFLICT (queue, grp) DO UPDATE SET tokens = excluded.tokens, at = excluded.at,
      held_until = excluded.held_until`;
}

/** When the first of the queue's groups held by its rate with jobs pending gets a token. */
export async function nextGroupToken(
  tx: TxSql,
  queue: string,
  now: number,
): Promise<number | null> {
  const [row] = await tx<{ at: number | null }[]>`
    SELECT min(b.held_until) AS at FROM group_buckets b
    JOIN job_groups j ON j.queue = b.queue AND j.grp = b.grp
    WHERE b.queue = ${queue} AND b.held_until > ${now} AND j.pending > 0`;
  return row.at === null ? null : Number(row.at);
}
