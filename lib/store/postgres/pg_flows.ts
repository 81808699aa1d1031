/**
 * Flows on PostgreSQL (core/flow.ts decides the rules): a flow's jobs and edges in a few
 * statements, dependents released inside the transaction that ended a prerequisite, a
 * delivery's outcomes, and the flow's reads.
 *
 * Several transactions (and servers) may end prerequisites of one dependent at once: the read of
 * a round's edges locks their dependents, in id order (`ORDER BY … FOR UPDATE`: rows are locked
 * as sorted), so two transactions take them in the same order and the second reads the first's
 * result; each edge is then met by a guarded UPDATE, and each count-down and cancel is one
 * UPDATE of a row it holds.
 *
 * @module
 */

import {
  checkFlowNodes,
  type CreatedNode,
  type EndedEdge,
  type EndState,
  type Flow,
  type FlowCreated,
  type FlowSummary,
  type NewFlow,
  type NewFlowNode,
  type OnFailure,
  type OutcomeRow,
  outcomesOf,
  planRelease,
  type PrerequisiteNow,
  releasedState,
  startOf,
} from "../../core/flow.ts";
import type { Delivery, JobState } from "../../core/job.ts";
import {
  type EdgeRow,
  flowOf,
  type FlowRow,
  flowSummaryOf,
  type NodeRow,
  type StateRow,
} from "../flow_rows.ts";
import type { FlowCancelled } from "../store.ts";
import type { BatchNews } from "./pg_group_commit.ts";
import type { Sql, TxSql } from "./pg_driver.ts";
import { withQueueDefault } from "./pg_queue_defaults.ts";

/** A prerequisite as read or just planned. */
interface Known {
  id: number;
  state: JobState;
}

/** Creates a flow (see `Store.createFlow`). */
export async function createFlow(
  tx: TxSql,
  news: BatchNews,
  flow: NewFlow,
  order: number[],
  now: number,
): Promise<FlowCreated> {
  if (flow.key !== null) {
    const [holder] = await tx<{ id: number }[]>`SELECT id FROM flows WHERE key = ${flow.key}`;
    if (holder !== undefined) {
      return { id: holder.id, deduplicated: true, nodes: await nodesOf(tx, holder.id) };
    }
    // Two creates of one key at once: the second waits for the first's row and finds it.
    const [made] = await tx<{ id: number }[]>`
      INSERT INTO flows (key, created_at) VALUES (${flow.key}, ${now})
      ON CONFLICT (key) DO NOTHING RETURNING id`;
    if (made === undefined) {
      const [other] = await tx<{ id: number }[]>`SELECT id FROM flows WHERE key = ${flow.key}`;
      return { id: other.id, deduplicated: true, nodes: await nodesOf(tx, other.id) };
    }
    return {
      id: made.id,
      deduplicated: false,
      nodes: await insertNodes(tx, news, made.id, flow.nodes, order, new Map(), now),
    };
  }
  const [made] = await tx<{ id: number }[]>`
    INSERT INTO flows (key, created_at) VALUES (NULL, ${now}) RETURNING id`;
  return {
    id: made.id,
    deduplicated: false,
    nodes: await insertNodes(tx, news, made.id, flow.nodes, order, new Map(), now),
  };
}

/** Adds nodes to flow `flowId` (its leased job's lease checked by the caller). */
export async function addNodes(
  tx: TxSql,
  news: BatchNews,
  flowId: number,
  nodes: NewFlowNode[],
  now: number,
): Promise<FlowCreated> {
  const known = new Map<string, Known>();
  for (
    const row of await tx<{ ref: string; id: number; state: JobState }[]>`
      SELECT flow_ref AS ref, id, state FROM jobs WHERE flow_id = ${flowId}`
  ) {
    known.set(row.ref, { id: row.id, state: row.state });
  }
  const order = checkFlowNodes(nodes, new Set(known.keys()));
  return {
    id: flowId,
    deduplicated: false,
    nodes: await insertNodes(tx, news, flowId, nodes, order, known, now),
  };
}

/**
 * Inserts nodes in `order` with ids taken ahead from the jobs' identity (so each node's start,
 * which names its prerequisites' ids, is known before any row is written): one statement for
 * the jobs, one for the edges, one for the groups of pending grouped jobs.
 */
async function insertNodes(
  tx: TxSql,
  news: BatchNews,
  flowId: number,
  nodes: NewFlowNode[],
  order: number[],
  known: Map<string, Known>,
  now: number,
): Promise<CreatedNode[]> {
  const ids = (await tx<{ id: number }[]>`
    SELECT nextval(pg_get_serial_sequence('jobs', 'id')) AS id
    FROM generate_series(1, ${nodes.length})`).map((row) => Number(row.id)).sort((a, b) => a - b);
  const created = new Array<CreatedNode>(nodes.length);
  const rows: {
    id: number;
    node: NewFlowNode;
    state: JobState;
    run_at: number;
    waiting: number;
    error: string | null;
  }[] = [];
  const edges: { prereq: number; job: number; ord: number; rule: OnFailure; met: boolean }[] = [];
  let k = 0;
  for (const i of order) {
    const node = nodes[i];
    const id = ids[k++];
    const prereqs: PrerequisiteNow[] = node.depends_on.map((edge) => {
      const p = known.get(edge.ref)!;
      return { ref: edge.ref, id: p.id, state: p.state, on_failure: edge.on_failure };
    });
    const start = startOf(prereqs, node.job.run_at, now);
    const runAt = start.state === "pending" ? now : node.job.run_at;
    rows.push({
      id,
      node,
      state: start.state,
      run_at: runAt,
      waiting: start.waiting_on,
      error: start.error,
    });
    for (let e = 0; e < prereqs.length; e++) {
      edges.push({
        prereq: prereqs[e].id,
        job: id,
        ord: e,
        rule: prereqs[e].on_failure,
        met: start.met[e],
      });
    }
    known.set(node.ref, { id, state: start.state });
    created[i] = { ref: node.ref, id, queue: node.queue, state: start.state, run_at: runAt };
    if (start.state === "pending") news.ready.add(node.queue);
  }
  const jobs = rows.map((r) => r.node.job);
  await tx`
    INSERT INTO jobs (id, queue, state, priority, grp, payload, max_attempts, run_at, lease_ms,
      backoff_base_ms, backoff_max_ms, created_at, attributes, flow_id, flow_ref, waiting_on,
      last_error, finished_at)
    OVERRIDING SYSTEM VALUE
    SELECT t.id, t.queue, t.state, t.priority, t.grp, t.payload,
      ${withQueueDefault(tx, "max_attempts", "t.max_attempts")}, t.run_at,
      ${withQueueDefault(tx, "lease_ms", "t.lease_ms")},
      ${withQueueDefault(tx, "backoff_base_ms", "t.base_ms")},
      ${withQueueDefault(tx, "backoff_max_ms", "t.max_ms")}, ${now}::bigint, t.attributes,
      ${flowId}::bigint, t.ref, t.waiting, t.error,
      CASE WHEN t.state = 'cancelled' THEN ${now}::bigint END
    FROM unnest(
      ${rows.map((r) => r.id)}::bigint[], ${rows.map((r) => r.node.queue)}::text[],
      ${rows.map((r) => r.state)}::text[], ${jobs.map((j) => j.priority)}::int[],
      ${jobs.map((j) => j.group ?? null)}::text[], ${jobs.map((j) => j.payload)}::text[],
      ${jobs.map((j) => j.max_attempts)}::int[], ${rows.map((r) => r.run_at)}::bigint[],
      ${jobs.map((j) => j.lease_ms)}::bigint[],
      ${jobs.map((j) => j.backoff?.base_ms ?? null)}::bigint[],
      ${jobs.map((j) => j.backoff?.max_ms ?? null)}::bigint[],
      ${jobs.map((j) => j.attributes ?? null)}::text[], ${rows.map((r) => r.node.ref)}::text[],
      ${rows.map((r) => r.waiting)}::int[], ${rows.map((r) => r.error)}::text[]
    ) AS t(id, queue, state, priority, grp, payload, max_attempts, run_at, lease_ms, base_ms,
      max_ms, attributes, ref, waiting, error)
    LEFT JOIN queue_settings s ON s.name = t.queue
    ORDER BY t.id`;
  if (edges.length > 0) {
    await tx`
      INSERT INTO flow_edges (prereq_id, job_id, ord, on_failure, met)
      SELECT p, j, o, r, m <> 0 FROM unnest(${edges.map((e) => e.prereq)}::bigint[],
        ${edges.map((e) => e.job)}::bigint[], ${edges.map((e) => e.ord)}::int[],
        ${edges.map((e) => e.rule)}::text[], ${edges.map((e) => e.met ? 1 : 0)}::int[])
        AS x(p, j, o, r, m)`;
  }
  // No trigger counts inserted rows in their groups (migration 006): pending grouped ones here.
  const grouped = rows.filter((r) => r.state === "pending" && r.node.job.group != null);
  if (grouped.length > 0) {
    await tx`
      INSERT INTO job_groups AS t (queue, grp, pending)
      SELECT queue, grp, count(*) FROM unnest(${grouped.map((r) => r.node.queue)}::text[],
        ${grouped.map((r) => r.node.job.group!)}::text[]) AS g(queue, grp)
      GROUP BY queue, grp ORDER BY queue, grp
      ON CONFLICT (queue, grp) DO UPDATE SET pending = t.pending + excluded.pending`;
  }
  return created;
}

/**
 * Jobs that just ended in this transaction: releases or cancels their dependents, round after
 * round (a cancelled dependent is an ended prerequisite of the next), as core/flow.ts says;
 * what it did goes into `news` (the queues to wake here and on the other servers).
 */
export async function ended(
  tx: TxSql,
  news: BatchNews,
  jobs: readonly { id: number; state: EndState }[],
  now: number,
): Promise<void> {
  let round = jobs;
  while (round.length > 0) {
    const state = new Map(round.map((j) => [j.id, j.state]));
    const rows = await tx<
      { prereq_id: number; job_id: number; on_failure: OnFailure; prereq_ref: string }[]
    >`
      SELECT e.prereq_id, e.job_id, e.on_failure, p.flow_ref AS prereq_ref FROM flow_edges e
      JOIN jobs d ON d.id = e.job_id JOIN jobs p ON p.id = e.prereq_id
      WHERE e.prereq_id = ANY(${round.map((j) => j.id)}::bigint[]) AND NOT e.met
        AND d.state = 'blocked'
      ORDER BY e.job_id
      FOR UPDATE OF d`;
    if (rows.length === 0) return;
    const edges: EndedEdge[] = rows.map((row) => ({
      prereq_id: Number(row.prereq_id),
      prereq_ref: row.prereq_ref,
      prereq_state: state.get(Number(row.prereq_id))!,
      job_id: Number(row.job_id),
      on_failure: row.on_failure,
    }));
    const plan = planRelease(edges);
    if (plan.met.length > 0) {
      // Each edge met once; the dependents' counts go down by the edges this statement met.
      const counted = await tx<
        { id: number; queue: string; run_at: number; waiting_on: number }[]
      >`
        WITH m AS (
          UPDATE flow_edges e SET met = true
          FROM unnest(${plan.met.map(([p]) => p)}::bigint[],
            ${plan.met.map(([, j]) => j)}::bigint[]) AS x(prereq_id, job_id)
          WHERE e.prereq_id = x.prereq_id AND e.job_id = x.job_id AND NOT e.met
          RETURNING e.job_id
        ), c AS (
          SELECT job_id, count(*)::int AS n FROM m GROUP BY job_id ORDER BY job_id
        )
        UPDATE jobs j SET waiting_on = j.waiting_on - c.n FROM c
        WHERE j.id = c.job_id AND j.state = 'blocked'
        RETURNING j.id, j.queue, j.run_at, j.waiting_on`;
      const released = counted.filter((row) => row.waiting_on <= 0);
      if (released.length > 0) {
        const states = released.map((row) => releasedState(row.run_at, now));
        await tx`
          UPDATE jobs j SET state = x.state,
            run_at = CASE WHEN x.state = 'pending' THEN ${now}::bigint ELSE j.run_at END
          FROM unnest(${released.map((r) => r.id)}::bigint[], ${states}::text[])
            AS x(id, state)
          WHERE j.id = x.id AND j.state = 'blocked'`;
        for (let i = 0; i < released.length; i++) {
          const row = released[i];
          if (states[i] === "pending") {
            news.ready.add(row.queue);
            if (!news.released.ready.includes(row.queue)) news.released.ready.push(row.queue);
          } else if (news.released.due === null || row.run_at < news.released.due) {
            news.released.due = Number(row.run_at);
          }
        }
      }
    }
    const next: { id: number; state: EndState }[] = [];
    if (plan.cancel.size > 0) {
      const ids = [...plan.cancel.keys()].sort((a, b) => a - b);
      const cancelled = await tx<{ id: number }[]>`
        UPDATE jobs j SET state = 'cancelled', finished_at = ${now}::bigint, last_error = x.error,
          waiting_on = 0
        FROM unnest(${ids}::bigint[], ${ids.map((id) => plan.cancel.get(id)!)}::text[])
          AS x(id, error)
        WHERE j.id = x.id AND j.state = 'blocked'
        RETURNING j.id`;
      for (const row of cancelled) {
        news.released.ended.push(Number(row.id));
        news.finished.push(Number(row.id));
        next.push({ id: Number(row.id), state: "cancelled" });
      }
    }
    round = next;
  }
}

/** Gives each delivery of a flow's job with prerequisites their outcomes. */
export async function attachOutcomes(tx: TxSql, lists: readonly Delivery[][]): Promise<void> {
  const wanted: Delivery[] = [];
  for (const list of lists) for (const d of list) if (d.job.flow !== undefined) wanted.push(d);
  if (wanted.length === 0) return;
  const rows = await tx<(OutcomeRow & { job_id: number })[]>`
    SELECT e.job_id, e.on_failure, p.id, p.flow_ref AS ref, p.state, p.result, p.last_error
    FROM flow_edges e JOIN jobs p ON p.id = e.prereq_id
    WHERE e.job_id = ANY(${wanted.map((d) => d.job.id)}::bigint[])
    ORDER BY e.job_id, e.ord`;
  const byJob = new Map<number, OutcomeRow[]>();
  for (const row of rows) {
    const id = Number(row.job_id);
    let list = byJob.get(id);
    if (list === undefined) byJob.set(id, list = []);
    list.push({ ...row, id: Number(row.id) });
  }
  for (const d of wanted) {
    const list = byJob.get(d.job.id);
    if (list !== undefined) d.prerequisites = outcomesOf(list);
  }
}

/** Cancels a flow's nodes that have not ended; null when there is no such flow. */
export async function cancelFlow(
  tx: TxSql,
  news: BatchNews,
  flowId: number,
  now: number,
): Promise<FlowCancelled | null> {
  const [flow] = await tx`SELECT id FROM flows WHERE id = ${flowId}`;
  if (flow === undefined) return null;
  const rows = await tx<{ id: number; queue: string; was: JobState; token: string | null }[]>`
    WITH o AS (
      SELECT id, state FROM jobs
      WHERE flow_id = ${flowId} AND state IN ('blocked', 'pending', 'delayed', 'leased')
      ORDER BY id FOR UPDATE
    )
    UPDATE jobs j SET state = 'cancelled', finished_at = ${now}::bigint, lease_expires_at = NULL,
      waiting_on = 0
    FROM o WHERE j.id = o.id
    RETURNING j.id, j.queue, o.state AS was, j.lease_token AS token`;
  const revoked: [number, string, string][] = [];
  for (const row of rows) {
    news.finished.push(Number(row.id));
    if (row.was === "leased" && row.token !== null) {
      revoked.push([Number(row.id), row.token, row.queue]);
      news.ended.push([Number(row.id), row.token, "cancelled"]);
      news.ready.add(row.queue);
    }
  }
  return {
    id: flowId,
    cancelled: rows.length,
    ids: rows.map((row) => Number(row.id)).sort((a, b) => a - b),
    revoked,
  };
}

/** Reads a flow with its nodes. */
export async function getFlow(sql: Sql, flowId: number): Promise<Flow | null> {
  const [flow] = await sql<FlowRow[]>`SELECT id, key, created_at FROM flows WHERE id = ${flowId}`;
  if (flow === undefined) return null;
  const nodes = await sql<NodeRow[]>`
    SELECT id, flow_ref AS ref, queue, state, finished_at FROM jobs
    WHERE flow_id = ${flowId} ORDER BY id`;
  const edges = await sql<EdgeRow[]>`
    SELECT e.job_id, p.flow_ref AS ref, e.on_failure FROM jobs d
    JOIN flow_edges e ON e.job_id = d.id JOIN jobs p ON p.id = e.prereq_id
    WHERE d.flow_id = ${flowId} ORDER BY e.job_id, e.ord`;
  return flowOf(flow, nodes, edges);
}

/** Flows after `after` (or, `newest`, before it), without their nodes. */
export async function listFlows(
  sql: Sql,
  after: number,
  limit: number,
  newest: boolean,
): Promise<FlowSummary[]> {
  const flows = newest
    ? await sql<FlowRow[]>`
      SELECT id, key, created_at FROM flows WHERE ${after} <= 0 OR id < ${after}
      ORDER BY id DESC LIMIT ${limit}`
    : await sql<FlowRow[]>`
      SELECT id, key, created_at FROM flows WHERE id > ${after} ORDER BY id LIMIT ${limit}`;
  if (flows.length === 0) return [];
  const rows = await sql<(StateRow & { flow_id: number })[]>`
    SELECT flow_id, state, count(*)::int AS n, max(finished_at) AS finished FROM jobs
    WHERE flow_id = ANY(${flows.map((f) => f.id)}::bigint[]) GROUP BY flow_id, state`;
  return flows.map((flow) =>
    flowSummaryOf(flow, rows.filter((row) => Number(row.flow_id) === Number(flow.id)))
  );
}

/** Drops the edges into deleted jobs and the flows they leave without jobs. */
export async function swept(
  tx: TxSql,
  jobs: readonly { id: number; flow_id: number | null }[],
): Promise<void> {
  const inFlow = jobs.filter((job) => job.flow_id !== null);
  if (inFlow.length === 0) return;
  await tx`DELETE FROM flow_edges WHERE job_id = ANY(${inFlow.map((j) => j.id)}::bigint[])`;
  const flows = [...new Set(inFlow.map((j) => Number(j.flow_id)))];
  await tx`
    DELETE FROM flows f WHERE f.id = ANY(${flows}::bigint[])
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.flow_id = f.id)`;
}

async function nodesOf(tx: TxSql, flowId: number): Promise<CreatedNode[]> {
  const rows = await tx<
    { id: number; ref: string; queue: string; state: JobState; run_at: number }[]
  >`
    SELECT id, flow_ref AS ref, queue, state, run_at FROM jobs WHERE flow_id = ${flowId}
    ORDER BY id`;
  return rows.map((row) => ({
    ref: row.ref,
    id: Number(row.id),
    queue: row.queue,
    state: row.state,
    run_at: Number(row.run_at),
  }));
}
