/**
 * The PostgreSQL store's statements that stand on their own: the claim's pieces, the batched
 * writes the coalescers submit (acks, progress reports, enqueues without keys), the writes of a
 * keyed enqueue's plan, and the ends of leases. Each runs inside a transaction it is given;
 * pg_store.ts decides when.
 *
 * @module
 */

import { attempted, type JobRow } from "../job_row.ts";
import { jobNotFound, leaseLost, type TegamiError } from "../../core/errors.ts";
import type { Enqueued, JobState, NewJob } from "../../core/job.ts";
import type { PlannedChange } from "../../core/dedup.ts";
import { MAINTENANCE_BATCH } from "../../core/limits.ts";
import {
  afterLeaseEnd,
  type DoneRetention,
  initialState,
  type LeaseEndCause,
  type Transition,
} from "../../core/lifecycle.ts";
import type { AckResult, EndedLease } from "../store.ts";
import type { SqlFragment, TxSql } from "./pg_driver.ts";
import type { BatchNews } from "./pg_group_commit.ts";
import { withQueueDefault } from "./pg_queue_defaults.ts";
import { ended as flowEnded } from "./pg_flows.ts";

export { QUEUE_DEFAULTS, withQueueDefault } from "./pg_queue_defaults.ts";

/**
 * Runs a claim statement with sorting disabled, so that it reads its candidates in the order of
 * the pending index and stops after the first `n` it can lock, whatever the planner believes.
 *
 * Left to its statistics, the planner picks a plan that reads every pending job of the queue
 * and sorts them whenever it thinks few are pending — which is what a queue's statistics say
 * most of the time (nearly all rows done), until a burst arrives. Every claim then sorts the
 * whole backlog, which costs orders of magnitude more with a deep backlog (docs/performance.md). The only sorts
 * left are the ones no plan can avoid (the claim's own numbering of at most `n` rows). The
 * setting is local to the transaction and put back at once, pipelined with the statement.
 */
export function inIndexOrder<T>(tx: TxSql, statement: Promise<T>): Promise<T> {
  return withLocalSetting(tx, "enable_sort", "off", "on", statement);
}

/**
 * Runs `statement` with the session setting `name` at `during`, then sets it to `after`: local
 * to the transaction, the three sent at once in this order. Only for an operation that runs
 * alone in its batch, or whose other statements the setting does not change.
 */
async function withLocalSetting<T>(
  tx: TxSql,
  name: string,
  during: string,
  after: string,
  statement: Promise<T>,
): Promise<T> {
  const [, rows] = await Promise.all([
    tx`SELECT set_config(${name}, ${during}, true)`,
    statement,
    tx`SELECT set_config(${name}, ${after}, true)`,
  ]);
  return rows;
}

/**
 * Runs a statement that changes many jobs' states at once and counts their groups itself (its
 * `RETURNING` rows go through {@linkcode countGroups}), with the row triggers' counting of
 * groups off for it (migration 006_group_bulk.sql says why). Local to the transaction, put
 * back at once, pipelined with the statement. Only for an operation that runs alone in its
 * batch (not `pipelined`): a statement of another operation sent between the two settings
 * would have its grouped rows go uncounted.
 */
export function countingGroups<T>(tx: TxSql, statement: Promise<T>): Promise<T> {
  return withLocalSetting(tx, "tegami.group_rows", "statement", "row", statement);
}

/**
 * Deletes at most a batch of the jobs that `match` (over `j`, a job, and `s`, its queue's
 * settings row) in the queues whose setting `column` is set; answers their ids.
 */
export function sweepBySetting(
  tx: TxSql,
  column: "retain_dead_ms" | "retain_pending_ms",
  match: SqlFragment,
): Promise<{ id: number; flow_id: number | null }[]> {
  return tx<{ id: number; flow_id: number | null }[]>`
    WITH f AS (
      SELECT x.id FROM queue_settings s
      CROSS JOIN LATERAL (
        SELECT j.id FROM jobs j WHERE j.queue = s.name AND ${match}
        LIMIT ${MAINTENANCE_BATCH} FOR UPDATE OF j SKIP LOCKED
      ) x
      WHERE s.${tx(column)} IS NOT NULL
      LIMIT ${MAINTENANCE_BATCH}
    )
    DELETE FROM jobs j USING f WHERE j.id = f.id RETURNING j.id, j.flow_id`;
}

/**
 * True for a finished job `j` outside any flow, or whose flow has no node left to end: a flow's
 * jobs stay until its last node has ended.
 */
export function flowDone(tx: TxSql): SqlFragment {
  return tx`(j.flow_id IS NULL OR NOT EXISTS (
    SELECT 1 FROM jobs u WHERE u.flow_id = j.flow_id
      AND u.state IN ('blocked', 'pending', 'delayed', 'leased')))`;
}

/**
 * The CTE `g` that adds the jobs of CTE `changed` (`queue`, `grp`, and the `state` they are in
 * now) that became pending to their groups' counts, one upsert per group, in (queue, group)
 * order so that transactions beside this one lock group rows in the same order. For statements
 * whose rows were counted in no group before: every INSERT of jobs (no trigger counts them),
 * and UPDATEs of delayed or dead jobs run through {@linkcode countingGroups}.
 */
export function countGroups(tx: TxSql): SqlFragment {
  return tx`g AS (
        INSERT INTO job_groups AS t (queue, grp, pending)
        SELECT queue, grp, count(*) FROM changed
        WHERE grp IS NOT NULL AND state = 'pending'
        GROUP BY queue, grp ORDER BY queue, grp
        ON CONFLICT (queue, grp) DO UPDATE SET pending = t.pending + excluded.pending
      )`;
}

/**
 * The end of both claim statements, after their CTEs `s` (the queue's flags) and `n` (the chosen
 * job ids with their claim position `k`): leases each job with the token and lease length fixed
 * for its position, and answers the leased rows, or one row of flags when nothing was claimed.
 */
export function leaseClaimed(
  tx: TxSql,
  tokens: string[],
  leases: (number | null)[],
  fallback: number,
  now: number,
): SqlFragment {
  return tx`p AS (
        SELECT * FROM unnest(${tokens}::text[], ${leases}::bigint[]) WITH ORDINALITY
          AS p(token, lease, k)
      ), u AS (
        -- The lease length is claimLeaseMs() (core/lifecycle.ts) in SQL: the consumer's, else
        -- the job's own, else the server's.
        UPDATE jobs j SET state = 'leased', attempts = j.attempts + 1, lease_token = p.token,
          lease_len_ms = coalesce(p.lease, j.lease_ms, ${fallback}::bigint),
          lease_expires_at = ${now}::bigint + coalesce(p.lease, j.lease_ms, ${fallback}::bigint)
        FROM n JOIN p ON p.k = n.k
        WHERE j.id = n.id
        RETURNING j.*, n.k
      )
      -- One row at least, so that "limited" and "grouped" are heard when nothing was claimed.
      SELECT u.*, s.limited, s.grouped, s.pending FROM s LEFT JOIN u ON true`;
}

/**
 * The claim's count of the queue's pending jobs (those it is about to lease included), at most
 * `limit`: none is read when `limit` is 0.
 */
export function countPending(tx: TxSql, queue: string, limit: number): SqlFragment {
  // ORDER BY run_at reads jobs_pending_age (every pending job) rather than, for a deep backlog,
  // the table (see pg_backlog_watch.ts).
  return tx`(SELECT count(*)::int FROM (
            SELECT 1 FROM jobs WHERE queue = ${queue} AND state = 'pending' ORDER BY run_at
            LIMIT ${limit}
          ) pending)`;
}

/** One ack waiting for its shared statement. */
export interface AckItem {
  /** The job. */
  id: number;
  /** The lease's token. */
  token: string;
  /** The result (JSON text), or null. */
  result: string | null;
  /** When. */
  now: number;
  /** What decides whether the ack deletes the job rather than keep it done, if anything. */
  retention: DoneRetention | undefined;
}

/**
 * The server's retention of done jobs for an ack's statement, or null when the job is kept done
 * whatever its queue's (no retention given, or someone watches the job).
 */
function retainMs(item: AckItem): number | null {
  const r = item.retention;
  return r === undefined || r.watched(item.id) ? null : r.retainDoneMs;
}

/**
 * Completes leased jobs, one statement for all: each ack that presents its job's current,
 * unexpired token completes it; a repeated ack of a done job with the token that completed it
 * answers the same; anything else is `lease_lost`, or `not_found` for an unknown id. A job
 * outside any flow whose queue keeps done jobs for no time (its `retain_done_ms`, else
 * the server's) is deleted rather than kept done, unless someone watches it, as
 * core/lifecycle.ts's `deletedAtAck` decides for the SQLite store (here in SQL, the watch asked
 * when the statement is built: the ack reads the queue's settings with the job).
 */
export async function ackMany(
  tx: TxSql,
  news: BatchNews,
  items: AckItem[],
): Promise<(AckResult | TegamiError)[]> {
  const rows = await tx<
    {
      k: number;
      queue: string | null;
      grp: string | null;
      limited: boolean | null;
      state: JobState | null;
      token: string | null;
      flow_id: number | null;
      done: boolean;
    }[]
  >`
    WITH a AS (
      SELECT * FROM unnest(${items.map((i) => i.id)}::bigint[], ${
    items.map((i) => i.token)
  }::text[],
        ${items.map((i) => i.result)}::text[], ${items.map((i) => i.now)}::bigint[],
        ${items.map(retainMs)}::bigint[])
        WITH ORDINALITY AS a(id, token, result, now, retain_ms, k)
    ), j AS (
      SELECT a.k, jobs.id, jobs.queue, jobs.grp, jobs.state, jobs.lease_token, jobs.flow_id,
        s.concurrency IS NOT NULL AS limited,
        a.retain_ms IS NOT NULL AND jobs.flow_id IS NULL
          AND coalesce(s.retain_done_ms, a.retain_ms) = 0 AS drops
      FROM a JOIN jobs ON jobs.id = a.id LEFT JOIN queue_settings s ON s.name = jobs.queue
    ), w AS (
      -- The first ack of each job that holds its lease: a repeated one changes nothing.
      SELECT DISTINCT ON (a.id) a.id, a.token, a.result, a.now, j.drops
      FROM a JOIN j ON j.k = a.k
      WHERE j.state = 'leased' AND j.lease_token = a.token
      ORDER BY a.id, a.k
    ), d AS (
      DELETE FROM jobs USING w
      WHERE jobs.id = w.id AND w.drops AND jobs.state = 'leased' AND jobs.lease_token = w.token
        AND jobs.lease_expires_at > w.now
      RETURNING jobs.id, w.token
    ), u AS (
      UPDATE jobs SET state = 'done', result = w.result, finished_at = w.now,
        lease_expires_at = NULL
      FROM w
      WHERE jobs.id = w.id AND NOT w.drops AND jobs.state = 'leased'
        AND jobs.lease_token = w.token AND jobs.lease_expires_at > w.now
      RETURNING jobs.id, w.token
    )
    SELECT a.k, j.queue, j.grp, j.limited, j.state, j.lease_token AS token, j.flow_id,
      EXISTS (SELECT 1 FROM u WHERE u.id = a.id AND u.token = a.token)
        OR EXISTS (SELECT 1 FROM d WHERE d.id = a.id AND d.token = a.token) AS done
    FROM a LEFT JOIN j ON j.k = a.k
    ORDER BY a.k`;
  // The statement read the jobs as they were when it began. A job it found leased with the
  // ack's token but did not complete may have been completed meanwhile by a transaction beside
  // this one (the same ack sent twice, through two transactions or two servers): read those
  // again, as they are now, so a repeated ack answers the same however the two overlapped.
  const again = rows.flatMap((row, i) =>
    !row.done && row.state === "leased" && row.token === items[i].token ? [items[i].id] : []
  );
  const current = again.length === 0
    ? new Map<number, { state: JobState; token: string | null }>()
    : new Map(
      (await tx<{ id: number; state: JobState; token: string | null }[]>`
        SELECT id, state, lease_token AS token FROM jobs WHERE id = ANY(${again}::bigint[])`)
        .map((row) => [row.id, row]),
    );
  for (let i = 0; i < rows.length; i++) if (rows[i].done) news.finished.push(items[i].id);
  // A flow's prerequisite that is done now releases its dependents in this transaction.
  const finished = rows.flatMap((row, i) =>
    row.done && row.flow_id !== null ? [{ id: items[i].id, state: "done" as const }] : []
  );
  if (finished.length > 0) await flowEnded(tx, news, finished, items[0].now);
  return rows.map((row, i) => {
    const { id, token } = items[i];
    if (row.queue === null) return jobNotFound(id);
    if (row.done) {
      // A slot of the job's group or queue is free: servers whose consumers wait for it must
      // hear.
      const frees = row.grp !== null || row.limited === true;
      if (frees) news.ready.add(row.queue);
      return { id, queue: row.queue, frees };
    }
    // Read again and gone: a repeated ack deleted it meanwhile.
    if (again.includes(id) && !current.has(id)) return jobNotFound(id);
    const seen = current.get(id) ?? row;
    if (seen.state === "done" && seen.token === token) {
      return { id, queue: row.queue, frees: false };
    }
    return leaseLost(id, "ack");
  });
}

/** One progress report waiting for its shared statement. */
export interface ProgressItem {
  /** The job. */
  id: number;
  /** The lease's token. */
  token: string;
  /** The report (JSON text). */
  progress: string;
  /** When. */
  now: number;
}

/**
 * Records progress reports, one statement for all, fenced like a checkpoint: a report whose
 * token holds its job's current, unexpired lease is stored, anything else is `lease_lost`, or
 * `not_found` for an unknown id. Of several reports on one lease, the last is written (the
 * earlier ones are answered like it: they were overwritten in the same commit).
 */
export async function progressMany(
  tx: TxSql,
  news: BatchNews,
  items: ProgressItem[],
): Promise<({ id: number } | TegamiError)[]> {
  const last = new Map<string, number>();
  items.forEach((item, i) => last.set(`${item.id} ${item.token}`, i));
  const sent = [...last.values()].sort((a, b) => a - b).map((i) => items[i]);
  const rows = await tx<{ found: boolean; ok: boolean }[]>`
    WITH p AS (
      SELECT * FROM unnest(${sent.map((i) => i.id)}::bigint[], ${sent.map((i) => i.token)}::text[],
        ${sent.map((i) => i.progress)}::text[], ${sent.map((i) => i.now)}::bigint[])
        WITH ORDINALITY AS p(id, token, progress, now, k)
    ), u AS (
      UPDATE jobs SET progress = p.progress, progress_at = p.now
      FROM p
      WHERE jobs.id = p.id AND jobs.state = 'leased' AND jobs.lease_token = p.token
        AND jobs.lease_expires_at > p.now
      RETURNING jobs.id, p.token
    )
    SELECT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = p.id) AS found,
      EXISTS (SELECT 1 FROM u WHERE u.id = p.id AND u.token = p.token) AS ok
    FROM p ORDER BY p.k`;
  const answer = new Map<string, { found: boolean; ok: boolean }>();
  sent.forEach((item, i) => {
    answer.set(`${item.id} ${item.token}`, rows[i]);
    if (rows[i].ok) news.progress.push([item.id, item.progress, item.now]);
  });
  return items.map(({ id, token }) => {
    const row = answer.get(`${id} ${token}`)!;
    if (row.ok) return { id };
    return row.found ? leaseLost(id, "report progress on") : jobNotFound(id);
  });
}

/** One enqueue without keys waiting for its shared statement. */
export interface EnqueueItem {
  /** The queue. */
  queue: string;
  /** The jobs, none with a key. */
  jobs: NewJob[];
  /** When. */
  now: number;
}

/** Stores the jobs of several enqueues without keys with one INSERT. */
export async function enqueueMany(
  tx: TxSql,
  news: BatchNews,
  items: EnqueueItem[],
): Promise<Enqueued[][]> {
  const queues: string[] = [];
  const states: JobState[] = [];
  const jobs: NewJob[] = [];
  const runAts: number[] = [];
  const nows: number[] = [];
  for (const item of items) {
    for (const job of item.jobs) {
      const state = initialState(job.run_at, item.now);
      queues.push(item.queue);
      states.push(state);
      jobs.push(job);
      runAts.push(state === "delayed" ? job.run_at : item.now);
      nows.push(item.now);
      if (state === "pending") news.ready.add(item.queue);
    }
  }
  // PostgreSQL inserts the rows in the SELECT's order, so their ids grow in that order. One
  // statement, groups counted in it (no trigger counts inserted rows).
  const inserted = await tx<{ id: number }[]>`
    WITH changed AS (
    INSERT INTO jobs (queue, state, priority, grp, payload, max_attempts, run_at, lease_ms,
      backoff_base_ms, backoff_max_ms, created_at, attributes)
    SELECT t.queue, t.state, t.priority, t.grp, t.payload,
      ${withQueueDefault(tx, "max_attempts", "t.max_attempts")}, t.run_at,
      ${withQueueDefault(tx, "lease_ms", "t.lease_ms")},
      ${withQueueDefault(tx, "backoff_base_ms", "t.base_ms")},
      ${withQueueDefault(tx, "backoff_max_ms", "t.max_ms")}, t.now, t.attributes
    FROM unnest(
      ${queues}::text[], ${states}::text[], ${jobs.map((j) => j.priority)}::int[],
      ${jobs.map((j) => j.group ?? null)}::text[],
      ${jobs.map((j) => j.payload)}::text[], ${jobs.map((j) => j.max_attempts)}::int[],
      ${runAts}::bigint[], ${jobs.map((j) => j.lease_ms)}::bigint[],
      ${jobs.map((j) => j.backoff?.base_ms ?? null)}::bigint[],
      ${jobs.map((j) => j.backoff?.max_ms ?? null)}::bigint[], ${nows}::bigint[],
      ${jobs.map((j) => j.attributes ?? null)}::text[]
    ) WITH ORDINALITY AS t(queue, state, priority, grp, payload, max_attempts, run_at,
      lease_ms, base_ms, max_ms, now, attributes, ord)
    LEFT JOIN queue_settings s ON s.name = t.queue
    ORDER BY t.ord
    RETURNING id, queue, grp, state
    ), ${countGroups(tx)}
    SELECT id FROM changed ORDER BY id`;
  let at = 0;
  return items.map((item) =>
    item.jobs.map(() => {
      const i = at++;
      return {
        id: inserted[i].id,
        deduplicated: false,
        duplicate: null,
        state: states[i],
        run_at: runAts[i],
      };
    })
  );
}

/** The job holding a key while a keyed enqueue is planned: a stored row, or a job of the batch. */
/**
 * Writes the replaced and extended jobs of a keyed enqueue, in one statement. A replacing job
 * without its own `max_attempts`, `lease_ms` or `backoff` takes its queue's, as a new one would.
 */
export async function applyDuplicates(
  tx: TxSql,
  queue: string,
  changes: readonly PlannedChange[],
): Promise<void> {
  if (changes.length === 0) return;
  const of = <T>(pick: (job: NewJob) => T) =>
    changes.map((c) => c.job === null ? null : pick(c.job));
  // `replace` is 1 for a replaced job, 0 for an extended one (the driver sends no boolean[]).
  await tx`
    UPDATE jobs j SET state = u.state, run_at = u.run_at,
      payload = CASE WHEN u.replace = 1 THEN u.payload ELSE j.payload END,
      priority = CASE WHEN u.replace = 1 THEN u.priority ELSE j.priority END,
      max_attempts = CASE WHEN u.replace = 1
        THEN ${withQueueDefault(tx, "max_attempts", "u.max_attempts")} ELSE j.max_attempts END,
      lease_ms = CASE WHEN u.replace = 1
        THEN ${withQueueDefault(tx, "lease_ms", "u.lease_ms")} ELSE j.lease_ms END,
      backoff_base_ms = CASE WHEN u.replace = 1
        THEN ${withQueueDefault(tx, "backoff_base_ms", "u.base_ms")} ELSE j.backoff_base_ms END,
      backoff_max_ms = CASE WHEN u.replace = 1
        THEN ${withQueueDefault(tx, "backoff_max_ms", "u.max_ms")} ELSE j.backoff_max_ms END,
      key_expires_at = CASE WHEN u.replace = 1 THEN u.key_expires_at ELSE j.key_expires_at END,
      attributes = CASE WHEN u.replace = 1 THEN u.attributes ELSE j.attributes END
    FROM unnest(
      ${changes.map((c) => c.id)}::bigint[], ${changes.map((c) => c.state)}::text[],
      ${changes.map((c) => c.run_at)}::bigint[], ${
    changes.map((c) => c.job === null ? 0 : 1)
  }::int[],
      ${of((j) => j.payload)}::text[], ${of((j) => j.priority)}::int[],
      ${of((j) => j.max_attempts)}::int[], ${of((j) => j.lease_ms)}::bigint[],
      ${of((j) => j.backoff?.base_ms ?? null)}::bigint[],
      ${of((j) => j.backoff?.max_ms ?? null)}::bigint[],
      ${changes.map((c) => c.key_expires_at)}::bigint[],
      ${of((j) => j.attributes ?? null)}::text[]
    ) AS u(id, state, run_at, replace, payload, priority, max_attempts, lease_ms, base_ms, max_ms,
      key_expires_at, attributes)
    LEFT JOIN queue_settings s ON s.name = ${queue}
    WHERE j.id = u.id`;
}

/**
 * Ends leases without an ack (rows locked by the caller) as the lifecycle rules say: pending
 * at once, or dead.
 */
export async function endLeases(
  tx: TxSql,
  news: BatchNews,
  ending: { row: JobRow; cause: LeaseEndCause }[],
  now: number,
): Promise<EndedLease[]> {
  const moves = ending.map(({ row, cause }) => ({
    id: row.id,
    next: afterLeaseEnd(attempted(row), cause, now),
  }));
  const moved = await unlease(tx, news, moves, now);
  return ending.map(({ row }, i) => {
    const ended: EndedLease = {
      id: row.id,
      queue: row.queue,
      token: row.lease_token ?? "",
      state: moved[i] === null ? moves[i].next.state : "pending",
    };
    if (moved[i] !== null) ended.moved_to = moved[i]!;
    return ended;
  });
}

/**
 * Writes leased jobs' moves to their next state (retry, or dead), in one statement; those that
 * died in a queue with a `dead_letter_queue` then move there, pending, without the group or key
 * of the queue they left. Answers, for each move, the queue it went to, or null.
 */
export async function unlease(
  tx: TxSql,
  news: BatchNews,
  moves: { id: number; next: Transition }[],
  now: number,
): Promise<(string | null)[]> {
  if (moves.length === 0) return [];
  const died = await tx<{ id: number }[]>`
    UPDATE jobs j SET state = m.state, last_error = m.error, attempts = m.attempts,
      lease_expires_at = NULL,
      run_at = CASE WHEN m.state = 'dead' THEN j.run_at ELSE m.run_at END,
      finished_at = CASE WHEN m.state = 'dead' THEN m.run_at ELSE j.finished_at END
    FROM unnest(${moves.map((m) => m.id)}::bigint[], ${moves.map((m) => m.next.state)}::text[],
      ${moves.map((m) => m.next.error)}::text[], ${moves.map((m) => m.next.attempts)}::int[],
      ${moves.map((m) => m.next.run_at)}::bigint[]) AS m(id, state, error, attempts, run_at)
    WHERE j.id = m.id
    RETURNING CASE WHEN m.state = 'dead' THEN j.id END AS id, j.flow_id`;
  // A flow's prerequisite that died releases or cancels its dependents in this transaction.
  const inFlows: { id: number; state: "dead" }[] = [];
  for (const row of died as unknown as { id: number | null; flow_id: number | null }[]) {
    if (row.id === null) continue;
    news.finished.push(Number(row.id));
    if (row.flow_id !== null) inFlows.push({ id: Number(row.id), state: "dead" });
  }
  if (inFlows.length > 0) await flowEnded(tx, news, inFlows, now);
  const dead = moves.filter((m) => m.next.state === "dead").map((m) => m.id);
  if (dead.length === 0) return moves.map(() => null);
  // Dead first, above, so the group counts settled; moved without a group, nothing to count.
  const rows = await tx<{ id: number; queue: string }[]>`
    UPDATE jobs j SET queue = s.dead_letter_queue, state = 'pending', attempts = 0,
      run_at = ${now}::bigint, finished_at = NULL, grp = NULL,
      released_key = coalesce(j.key, j.released_key), key = NULL, key_expires_at = NULL,
      dead_lettered_from = j.queue
    FROM queue_settings s
    WHERE j.id = ANY(${dead}::bigint[]) AND s.name = j.queue AND s.dead_letter_queue IS NOT NULL
    RETURNING j.id, j.queue`;
  const to = new Map(rows.map((row) => [Number(row.id), row.queue]));
  return moves.map((m) => to.get(m.id) ?? null);
}
