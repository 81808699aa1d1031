/**
 * A flow as both engines read it back: the rows each reads (the flow, its nodes, its edges, or
 * its counts by state) and the one way they become a {@linkcode Flow} or a
 * {@linkcode FlowSummary}: counts by state, and `finished_at`, the last node's end once every
 * node has ended (null while any has not, and for a flow with no nodes left).
 *
 * @module
 */

import type { Flow, FlowNode, FlowSummary, OnFailure } from "../core/flow.ts";
import { hasEnded } from "../core/flow.ts";
import type { JobState } from "../core/job.ts";
import { zeroCounts } from "./job_row.ts";

/** A flow's own row. */
export interface FlowRow {
  /** Its id. */
  id: number;
  /** Its dedup key, or null. */
  key: string | null;
  /** When it was created. */
  created_at: number;
}

/** One node of a flow: its job's id, ref, queue, state and end. */
export interface NodeRow {
  /** The job's id. */
  id: number;
  /** Its ref. */
  ref: string;
  /** Its queue. */
  queue: string;
  /** Its state. */
  state: JobState;
  /** When it ended, or null. */
  finished_at: number | null;
}

/** One edge, by its dependent's id, in `depends_on` order. */
export interface EdgeRow {
  /** The dependent's job id. */
  job_id: number;
  /** The prerequisite's ref. */
  ref: string;
  /** What the prerequisite's failure does. */
  on_failure: OnFailure;
}

/** How many of a flow's nodes are in one state, and the latest end among them. */
export interface StateRow {
  /** The state. */
  state: JobState;
  /** How many nodes are in it. */
  n: number;
  /** The latest `finished_at` among them, or null. */
  finished: number | null;
}

/** A flow's summary from its counts by state. */
export function flowSummaryOf(flow: FlowRow, states: readonly StateRow[]): FlowSummary {
  const counts = zeroCounts();
  let nodes = 0;
  let finished: number | null = 0;
  for (const row of states) {
    const n = Number(row.n);
    counts[row.state] += n;
    nodes += n;
    if (!hasEnded(row.state)) finished = null;
    else if (finished !== null) finished = Math.max(finished, Number(row.finished ?? 0));
  }
  return {
    id: Number(flow.id),
    key: flow.key,
    created_at: Number(flow.created_at),
    counts,
    finished_at: nodes === 0 ? null : finished,
  };
}

/** A flow with its nodes, in the order read, each with its edges in the order read. */
export function flowOf(
  flow: FlowRow,
  nodeRows: readonly NodeRow[],
  edges: readonly EdgeRow[],
): Flow {
  const nodes: FlowNode[] = [];
  const byId = new Map<number, FlowNode>();
  const states: StateRow[] = [];
  for (const row of nodeRows) {
    const node: FlowNode = {
      ref: row.ref,
      id: Number(row.id),
      queue: row.queue,
      state: row.state,
      depends_on: [],
    };
    nodes.push(node);
    byId.set(node.id, node);
    states.push({ state: row.state, n: 1, finished: row.finished_at });
  }
  for (const edge of edges) {
    byId.get(Number(edge.job_id))?.depends_on.push({ ref: edge.ref, on_failure: edge.on_failure });
  }
  return { ...flowSummaryOf(flow, states), nodes };
}
