/**
 * Flows on SQLite (core/flow.ts decides the rules): creating a flow's jobs and edges, releasing
 * dependents inside the transaction that ended a prerequisite, a delivery's outcomes, and the
 * flow's reads. Every method runs inside the store's open transaction (writes) or as a read.
 *
 * What a write released beyond its own jobs is staged ({@linkcode SqliteFlows.takeNews}) and
 * told once the transaction commits; a rollback or an undone operation drops it.
 *
 * @module
 */

import type { DatabaseSync, SQLInputValue } from "node:sqlite";
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
import { withQueueDefaults } from "../../core/queue_settings.ts";
import {
  type EdgeRow,
  flowOf,
  type FlowRow,
  flowSummaryOf,
  type NodeRow,
  type StateRow,
} from "../flow_rows.ts";
import type { FlowCancelled, Released } from "../store.ts";
import { CountedStatement, type StatementCount } from "./counted_statement.ts";
import { RowsStatement } from "./rows_statement.ts";
import type { QueueMirror } from "./queue_mirror.ts";

/** What the flows need of the store beside the database. */
export interface FlowHooks {
  /** Makes sure grouped jobs are counted before one is inserted (GROUP_TRACKING). */
  trackGroups(): void;
  /** Takes note that `queue` holds grouped jobs. */
  grouped(queue: string): void;
}

/** A node's prerequisite as read or just created. */
interface Known {
  id: number;
  state: JobState;
}

/** Flows over one SQLite database. */
export class SqliteFlows {
  readonly #s: ReturnType<typeof prepare>;
  readonly #queues: QueueMirror;
  readonly #hooks: FlowHooks;
  /** Whether any edge was ever stored: while none is, ends release nothing and cost nothing. */
  #any: boolean;
  /** News of the open transaction, and its length at the last savepoint. */
  #news: Released = emptyNews();
  #marked: { ready: number; ended: number; due: number | null } | null = null;

  /** Prepares the statements (counted into `count`). */
  constructor(db: DatabaseSync, count: StatementCount, queues: QueueMirror, hooks: FlowHooks) {
    this.#s = prepare(db, count);
    this.#queues = queues;
    this.#hooks = hooks;
    this.#any = this.#s.anyEdge.get() !== undefined;
  }

  /** Creates a flow (see `Store.createFlow`). */
  create(flow: NewFlow, order: number[], now: number): FlowCreated {
    const s = this.#s;
    if (flow.key !== null) {
      const holder = s.flowByKey.get(flow.key) as { id: number } | undefined;
      if (holder !== undefined) {
        return { id: holder.id, deduplicated: true, nodes: this.#nodesOf(holder.id) };
      }
    }
    const id = Number((s.insertFlow.get(flow.key, now) as { id: number }).id);
    return { id, deduplicated: false, nodes: this.#insert(id, flow.nodes, order, new Map(), now) };
  }

  /** Adds nodes to flow `flowId` (its leased job's lease checked by the caller). */
  add(flowId: number, nodes: NewFlowNode[], now: number): FlowCreated {
    const known = new Map<string, Known>();
    for (
      const row of this.#s.refsOf.all(flowId) as { ref: string; id: number; state: JobState }[]
    ) {
      known.set(row.ref, { id: row.id, state: row.state });
    }
    const order = checkFlowNodes(nodes, new Set(known.keys()));
    return {
      id: flowId,
      deduplicated: false,
      nodes: this.#insert(flowId, nodes, order, known, now),
    };
  }

  #insert(
    flowId: number,
    nodes: NewFlowNode[],
    order: number[],
    known: Map<string, Known>,
    now: number,
  ): CreatedNode[] {
    const s = this.#s;
    const created = new Array<CreatedNode>(nodes.length);
    // The ids the rows will get, known ahead so that edges and starts can name them: this
    // process is the file's only writer and `jobs` is AUTOINCREMENT, so a run of inserted rows
    // takes the ids after the last one ever given (checked as the rows go in).
    const last = (s.lastJobId.get() as { seq: number } | undefined)?.seq ?? 0;
    const rows: SQLInputValue[] = [];
    const edges: SQLInputValue[] = [];
    let next = Number(last) + 1;
    for (const i of order) {
      const node = nodes[i];
      const job = withQueueDefaults(node.job, this.#queues.settingsOf(node.queue));
      const prereqs: PrerequisiteNow[] = node.depends_on.map((edge) => {
        const p = known.get(edge.ref)!;
        return { ref: edge.ref, id: p.id, state: p.state, on_failure: edge.on_failure };
      });
      const start = startOf(prereqs, job.run_at, now);
      if (job.group != null) {
        this.#hooks.trackGroups();
        this.#hooks.grouped(node.queue);
      }
      const id = next++;
      const runAt = start.state === "pending" ? now : job.run_at;
      rows.push(
        id,
        node.queue,
        start.state,
        job.priority,
        job.group ?? null,
        job.payload,
        job.max_attempts,
        runAt,
        job.lease_ms,
        job.backoff?.base_ms ?? null,
        job.backoff?.max_ms ?? null,
        now,
        job.attributes ?? null,
        flowId,
        node.ref,
        start.waiting_on,
        start.error,
        start.state === "cancelled" ? now : null,
      );
      this.#queues.move(node.queue, null, start.state);
      for (let e = 0; e < prereqs.length; e++) {
        edges.push(prereqs[e].id, id, e, prereqs[e].on_failure, start.met[e] ? 1 : 0);
      }
      if (prereqs.length > 0) this.#any = true;
      known.set(node.ref, { id, state: start.state });
      created[i] = { ref: node.ref, id, queue: node.queue, state: start.state, run_at: runAt };
    }
    s.insertNodes.run(rows, (n, info) => {
      if (info.changes !== n) throw new Error(`Flow rows inserted short (${info.changes} of ${n})`);
    });
    if (edges.length > 0) s.insertEdges.run(edges, () => {});
    return created;
  }

  /**
   * Jobs that just ended: releases or cancels their dependents, round after round (a cancelled
   * dependent is an ended prerequisite of the next round), as core/flow.ts says.
   */
  ended(jobs: readonly { id: number; state: EndState }[], now: number): void {
    if (!this.#any) return;
    const s = this.#s;
    let round = jobs;
    while (round.length > 0) {
      const edges: EndedEdge[] = [];
      for (const job of round) {
        for (
          const row of s.edgesOut.all(job.id) as {
            job_id: number;
            on_failure: OnFailure;
            prereq_ref: string;
          }[]
        ) {
          edges.push({
            prereq_id: job.id,
            prereq_ref: row.prereq_ref,
            prereq_state: job.state,
            job_id: row.job_id,
            on_failure: row.on_failure,
          });
        }
      }
      if (edges.length === 0) return;
      const plan = planRelease(edges);
      // Set at a time: a prerequisite with thousands of dependents ends in a few statements.
      if (plan.met.length > 0) this.#meet(plan.met, now);
      const next: { id: number; state: EndState }[] = [];
      if (plan.cancel.size > 0) {
        const cancelled = s.cancelBlocked.all(now, JSON.stringify([...plan.cancel])) as {
          id: number;
          queue: string;
        }[];
        for (const row of cancelled) {
          this.#queues.move(row.queue, "blocked", "cancelled");
          this.#news.ended.push(row.id);
          next.push({ id: row.id, state: "cancelled" });
        }
      }
      round = next;
    }
  }

  /**
   * Meets the edges `met` (`[prereq, dependent]`, each once), counts their dependents down, and
   * releases those with none left.
   */
  #meet(met: [number, number][], now: number): void {
    const s = this.#s;
    const per = new Map<number, number>();
    for (const row of s.meetEdges.all(JSON.stringify(met)) as { job_id: number }[]) {
      per.set(row.job_id, (per.get(row.job_id) ?? 0) + 1);
    }
    if (per.size === 0) return;
    const counted = s.countDown.all(JSON.stringify([...per])) as {
      id: number;
      waiting_on: number;
      run_at: number;
      queue: string;
    }[];
    const released: [number, string, number][] = [];
    for (const row of counted) {
      if (row.waiting_on > 0) continue;
      const state = releasedState(row.run_at, now);
      released.push([row.id, state, state === "pending" ? now : row.run_at]);
      this.#queues.move(row.queue, "blocked", state);
      if (state === "pending") {
        if (!this.#news.ready.includes(row.queue)) this.#news.ready.push(row.queue);
      } else if (this.#news.due === null || row.run_at < this.#news.due) {
        this.#news.due = row.run_at;
      }
    }
    if (released.length > 0) s.release.run(JSON.stringify(released));
  }

  /** Gives each delivery of a flow's job with prerequisites their outcomes. */
  attach(lists: readonly Delivery[][]): void {
    if (!this.#any) return;
    for (const list of lists) {
      for (const delivery of list) {
        if (delivery.job.flow === undefined) continue;
        const rows = this.#s.prerequisites.all(delivery.job.id) as unknown as OutcomeRow[];
        if (rows.length > 0) delivery.prerequisites = outcomesOf(rows);
      }
    }
  }

  /** Cancels a flow's nodes that have not ended; null when there is no such flow. */
  cancel(flowId: number, now: number): FlowCancelled | null {
    const s = this.#s;
    if (s.flowById.get(flowId) === undefined) return null;
    const rows = s.unendedOf.all(flowId) as {
      id: number;
      queue: string;
      was: JobState;
      token: string | null;
    }[];
    s.cancelFlow.run(now, flowId);
    const revoked: [number, string, string][] = [];
    for (const row of rows) {
      this.#queues.move(row.queue, row.was, "cancelled");
      if (row.was === "leased" && row.token !== null) revoked.push([row.id, row.token, row.queue]);
    }
    return {
      id: flowId,
      cancelled: rows.length,
      ids: rows.map((row) => row.id).sort((a, b) => a - b),
      revoked,
    };
  }

  /** Reads a flow with its nodes. */
  get(flowId: number): Flow | null {
    const flow = this.#s.flowById.get(flowId) as FlowRow | undefined;
    if (flow === undefined) return null;
    return flowOf(
      flow,
      this.#s.nodesOf.all(flowId) as unknown as NodeRow[],
      this.#s.edgesOf.all(flowId) as unknown as EdgeRow[],
    );
  }

  /** Flows after `after` (or, `newest`, before it), without their nodes. */
  list(after: number, limit: number, newest: boolean): FlowSummary[] {
    const page = newest
      ? this.#s.flowsBefore.all(after <= 0 ? Number.MAX_SAFE_INTEGER : after, limit)
      : this.#s.flowsAfter.all(after, limit);
    return (page as unknown as FlowRow[]).map((flow) =>
      flowSummaryOf(flow, this.#s.countsOf.all(flow.id) as unknown as StateRow[])
    );
  }

  /** Forgets flows none of whose jobs is stored any more, among `ids`; deletes edges of `jobs`. */
  swept(jobs: readonly { id: number; flow_id: number | null }[]): void {
    const flows = new Set<number>();
    for (const job of jobs) {
      if (job.flow_id === null) continue;
      this.#s.dropEdgesOf.run(job.id);
      flows.add(job.flow_id);
    }
    for (const id of flows) this.#s.dropFlowIfEmpty.run(id, id);
  }

  /** The news staged by the open transaction, cleared (called at commit); null for none. */
  takeNews(): Released | null {
    const news = this.#news;
    this.#marked = null;
    if (news.ready.length === 0 && news.due === null && news.ended.length === 0) return null;
    this.#news = emptyNews();
    return news;
  }

  /** Drops the open transaction's news (a rollback). */
  dropNews(): void {
    this.#news = emptyNews();
    this.#marked = null;
  }

  /** Remembers where the news stands (a savepoint). */
  mark(): void {
    const n = this.#news;
    this.#marked = { ready: n.ready.length, ended: n.ended.length, due: n.due };
  }

  /** Drops the news since the last mark (an undone operation). */
  undo(): void {
    const m = this.#marked;
    if (m === null) return;
    this.#news.ready.length = m.ready;
    this.#news.ended.length = m.ended;
    this.#news.due = m.due;
  }

  #nodesOf(flowId: number): CreatedNode[] {
    return (this.#s.nodesOf.all(flowId) as {
      id: number;
      ref: string;
      queue: string;
      state: JobState;
      run_at: number;
    }[]).map((row) => ({
      ref: row.ref,
      id: row.id,
      queue: row.queue,
      state: row.state,
      run_at: row.run_at,
    }));
  }
}

function emptyNews(): Released {
  return { ready: [], due: null, ended: [] };
}

function prepare(db: DatabaseSync, count: StatementCount) {
  const p = (sql: string) => new CountedStatement(db.prepare(sql), count);
  return {
    anyEdge: p("SELECT 1 FROM flow_edges LIMIT 1"),
    flowByKey: p("SELECT id FROM flows WHERE key = ?"),
    flowById: p("SELECT id, key, created_at FROM flows WHERE id = ?"),
    insertFlow: p("INSERT INTO flows (key, created_at) VALUES (?, ?) RETURNING id"),
    lastJobId: p("SELECT seq FROM sqlite_sequence WHERE name = 'jobs'"),
    // The ids are given (see #insert): a clash with one taken meanwhile fails the insert.
    insertNodes: new RowsStatement(
      p,
      18,
      (rows) =>
        `INSERT INTO jobs (id, queue, state, priority, grp, payload, max_attempts, run_at,
           lease_ms, backoff_base_ms, backoff_max_ms, created_at, attributes, flow_id, flow_ref,
           waiting_on, last_error, finished_at)
         VALUES ${rows}`,
    ),
    insertEdges: new RowsStatement(
      p,
      5,
      (rows) => `INSERT INTO flow_edges (prereq_id, job_id, ord, on_failure, met) VALUES ${rows}`,
    ),
    refsOf: p("SELECT flow_ref AS ref, id, state FROM jobs WHERE flow_id = ?"),
    nodesOf: p(
      `SELECT id, flow_ref AS ref, queue, state, run_at, finished_at FROM jobs
       WHERE flow_id = ? ORDER BY id`,
    ),
    edgesOf: p(
      `SELECT e.job_id, p.flow_ref AS ref, e.on_failure FROM jobs d
       JOIN flow_edges e ON e.job_id = d.id JOIN jobs p ON p.id = e.prereq_id
       WHERE d.flow_id = ? ORDER BY d.id, e.ord`,
    ),
    countsOf: p(
      `SELECT state, count(*) AS n, max(finished_at) AS finished FROM jobs WHERE flow_id = ?
       GROUP BY state`,
    ),
    flowsAfter: p("SELECT id, key, created_at FROM flows WHERE id > ? ORDER BY id LIMIT ? + 0"),
    flowsBefore: p(
      "SELECT id, key, created_at FROM flows WHERE id < ? ORDER BY id DESC LIMIT ? + 0",
    ),
    // The unmet edges out of an ended job whose dependents are still blocked.
    edgesOut: p(
      `SELECT e.job_id, e.on_failure, p.flow_ref AS prereq_ref FROM flow_edges e
       JOIN jobs d ON d.id = e.job_id JOIN jobs p ON p.id = e.prereq_id
       WHERE e.prereq_id = ? AND e.met = 0 AND d.state = 'blocked'`,
    ),
    // The statements below take their rows as a JSON array of arrays (json_each).
    meetEdges: p(
      `UPDATE flow_edges SET met = 1
       FROM (SELECT value ->> 0 AS p, value ->> 1 AS j FROM json_each(?)) AS x
       WHERE flow_edges.prereq_id = x.p AND flow_edges.job_id = x.j AND flow_edges.met = 0
       RETURNING flow_edges.job_id`,
    ),
    countDown: p(
      `UPDATE jobs SET waiting_on = waiting_on - x.n
       FROM (SELECT value ->> 0 AS id, value ->> 1 AS n FROM json_each(?)) AS x
       WHERE jobs.id = x.id AND jobs.state = 'blocked'
       RETURNING jobs.id, jobs.waiting_on, jobs.run_at, jobs.queue`,
    ),
    release: p(
      `UPDATE jobs SET state = x.state, run_at = x.run_at
       FROM (SELECT value ->> 0 AS id, value ->> 1 AS state, value ->> 2 AS run_at
             FROM json_each(?)) AS x
       WHERE jobs.id = x.id AND jobs.state = 'blocked'`,
    ),
    cancelBlocked: p(
      `UPDATE jobs SET state = 'cancelled', finished_at = ?1, last_error = x.error, waiting_on = 0
       FROM (SELECT value ->> 0 AS id, value ->> 1 AS error FROM json_each(?2)) AS x
       WHERE jobs.id = x.id AND jobs.state = 'blocked'
       RETURNING jobs.id, jobs.queue`,
    ),
    unendedOf: p(
      `SELECT id, queue, state AS was, lease_token AS token FROM jobs
       WHERE flow_id = ? AND state IN ('blocked', 'pending', 'delayed', 'leased')`,
    ),
    cancelFlow: p(
      `UPDATE jobs SET state = 'cancelled', finished_at = ?1, lease_expires_at = NULL,
         waiting_on = 0
       WHERE flow_id = ?2 AND state IN ('blocked', 'pending', 'delayed', 'leased')`,
    ),
    prerequisites: p(
      `SELECT e.on_failure, p.id, p.flow_ref AS ref, p.state, p.result, p.last_error
       FROM flow_edges e JOIN jobs p ON p.id = e.prereq_id WHERE e.job_id = ? ORDER BY e.ord`,
    ),
    dropEdgesOf: p("DELETE FROM flow_edges WHERE job_id = ?"),
    dropFlowIfEmpty: p(
      "DELETE FROM flows WHERE id = ? AND NOT EXISTS (SELECT 1 FROM jobs WHERE flow_id = ?)",
    ),
  };
}
