/**
 * Flows: jobs that wait for jobs. The rules both stores follow, decided here once:
 *
 * - A flow is a graph of nodes, each a job with a `ref` unique in the flow and `depends_on`
 *   edges to other nodes' refs. {@linkcode checkFlowNodes} refuses duplicate or unknown refs,
 *   self-edges, cycles and graphs over the size limits, naming the node.
 * - A node with prerequisites is stored `blocked`, counting the edges not yet met. Each time a
 *   prerequisite ends (done, dead or cancelled), {@linkcode edgeOutcome} says what its edges do:
 *   a done prerequisite meets the edge; a failed one meets it too (`ignore`, `run`) or cancels
 *   the dependent (`cancel`), whose own dependents then see a cancelled prerequisite, and so on.
 *   {@linkcode planRelease} applies that to one round of ended prerequisites; the stores run
 *   rounds inside the transaction that ended the first one, so a dependent becomes pending (or
 *   delayed, {@linkcode releasedState}) in the same commit as its last prerequisite's ack.
 * - Each edge is met at most once: a dead prerequisite requeued and acked later meets nothing
 *   again.
 * - A released job's delivery carries its prerequisites' outcomes ({@linkcode outcomesOf}),
 *   within {@linkcode MAX_OUTCOME_BYTES}.
 *
 * @module
 */

import { invalid, TegamiError } from "./errors.ts";
import type { JobState, NewJob, Outcome, Outcomes } from "./job.ts";

export type { Outcome, Outcomes };

/** What a prerequisite's failure (dead or cancelled) does to a dependent, per edge. */
export type OnFailure = "cancel" | "ignore" | "run";

/** Every `on_failure` rule; the first is the default. */
export const ON_FAILURE: readonly OnFailure[] = ["cancel", "ignore", "run"];

/** The most nodes one request may create (a flow, or nodes added to one). */
export const MAX_FLOW_NODES = 20_000;

/** The most edges one request may create. */
export const MAX_FLOW_EDGES = 200_000;

/** The most prerequisites one node may have. */
export const MAX_NODE_PREREQUISITES = 20_000;

/** The longest ref, in characters. */
export const MAX_REF_CHARS = 200;

/**
 * The most bytes of prerequisites' outcomes one delivery carries (see {@linkcode outcomesOf}
 * for what is left out past it).
 */
export const MAX_OUTCOME_BYTES = 256 * 1024;

/** A job state in which a job has ended. */
export type EndState = "done" | "dead" | "cancelled";

/** One edge of a new node: the prerequisite's ref and what its failure does. */
export interface NewEdge {
  /** The prerequisite's ref. */
  ref: string;
  /** What the prerequisite's failure does to this node. */
  on_failure: OnFailure;
}

/** A node to create: a job, its queue, its ref and its prerequisites. */
export interface NewFlowNode {
  /** Unique in the flow. */
  ref: string;
  /** The job's queue. */
  queue: string;
  /** The job (without a key: the flow carries one). */
  job: NewJob;
  /** Its prerequisites, by ref. */
  depends_on: NewEdge[];
}

/** A flow to create. */
export interface NewFlow {
  /** Dedup key: while a flow holding it is stored, another with it answers that flow. */
  key: string | null;
  /** Its nodes. */
  nodes: NewFlowNode[];
}

/** A node as stored. */
export interface CreatedNode {
  /** Its ref. */
  ref: string;
  /** Its job's id. */
  id: number;
  /** Its job's queue. */
  queue: string;
  /** The state the job is in. */
  state: JobState;
  /** When it is due. */
  run_at: number;
}

/** The answer to creating a flow or adding nodes to one. */
export interface FlowCreated {
  /** The flow's id. */
  id: number;
  /** True when a flow with the same key existed and nothing was stored. */
  deduplicated: boolean;
  /** The nodes created (for a duplicate: the existing flow's nodes). */
  nodes: CreatedNode[];
}

/** One node of a stored flow. */
export interface FlowNode {
  /** Its ref. */
  ref: string;
  /** Its job's id. */
  id: number;
  /** Its job's queue. */
  queue: string;
  /** Its job's state. */
  state: JobState;
  /** Its prerequisites. */
  depends_on: NewEdge[];
}

/** A stored flow, whole. */
export interface Flow {
  /** Its id. */
  id: number;
  /** Its dedup key, or null. */
  key: string | null;
  /** When it was created. */
  created_at: number;
  /** Its nodes by state. */
  counts: Record<JobState, number>;
  /** When its last node ended, or null while any has not. */
  finished_at: number | null;
  /** Its nodes in creation order. */
  nodes: FlowNode[];
}

/** A flow in a listing: without its nodes. */
export type FlowSummary = Omit<Flow, "nodes">;

/** One edge whose prerequisite ended, with the dependent's state, for {@linkcode planRelease}. */
export interface EndedEdge {
  /** The prerequisite's job id. */
  prereq_id: number;
  /** The prerequisite's ref. */
  prereq_ref: string;
  /** The state it ended in. */
  prereq_state: EndState;
  /** The dependent's job id. */
  job_id: number;
  /** What the prerequisite's failure does to the dependent. */
  on_failure: OnFailure;
}

/** What one round of ended prerequisites does to their dependents. */
export interface ReleasePlan {
  /** Edges now met, as `[prereq_id, job_id]`, for dependents not cancelled. */
  met: [number, number][];
  /** Dependents to cancel, with the reason stored as their `last_error`. */
  cancel: Map<number, string>;
}

/** A prerequisite as the store reads it for {@linkcode outcomesOf}. */
export interface OutcomeRow {
  /** The edge's rule. */
  on_failure: OnFailure;
  /** The prerequisite's job id. */
  id: number;
  /** Its ref. */
  ref: string;
  /** Its state. */
  state: JobState;
  /** Its result. */
  result: string | null;
  /** Its last error. */
  last_error: string | null;
}

/** Whether a job in `state` has ended. */
export function hasEnded(state: JobState): state is EndState {
  return state === "done" || state === "dead" || state === "cancelled";
}

/** What an edge does when its prerequisite ends in `state`. */
export function edgeOutcome(rule: OnFailure, state: EndState): "met" | "cancel" {
  return state === "done" || rule !== "cancel" ? "met" : "cancel";
}

/** The state a blocked job whose last edge was met goes to. */
export function releasedState(run_at: number, now: number): "pending" | "delayed" {
  return run_at > now ? "delayed" : "pending";
}

/** The `last_error` of a job cancelled because a prerequisite failed. */
export function cancelReason(ref: string, id: number, state: EndState): string {
  return `Prerequisite "${ref}" (job ${id}) ended ${state}`;
}

/** A new node's prerequisite as it stands when the node is stored. */
export interface PrerequisiteNow {
  /** Its ref. */
  ref: string;
  /** Its job id. */
  id: number;
  /** Its state now. */
  state: JobState;
  /** The edge's rule. */
  on_failure: OnFailure;
}

/** How a new node starts. */
export interface NodeStart {
  /** `blocked`, `pending`, `delayed`, or `cancelled` (a prerequisite already failed). */
  state: JobState;
  /** Its edges not met yet. */
  waiting_on: number;
  /** Per prerequisite, in order: whether its edge is met already. */
  met: boolean[];
  /** For a cancelled node, why; else null. */
  error: string | null;
}

/**
 * How a new node starts: each edge to a prerequisite that has ended is resolved now as
 * {@linkcode edgeOutcome} says, each other one waits.
 */
export function startOf(
  prereqs: readonly PrerequisiteNow[],
  run_at: number,
  now: number,
): NodeStart {
  let waiting = 0;
  let error: string | null = null;
  const met = new Array<boolean>(prereqs.length);
  for (let i = 0; i < prereqs.length; i++) {
    const p = prereqs[i];
    met[i] = false;
    if (!hasEnded(p.state)) {
      waiting++;
    } else if (edgeOutcome(p.on_failure, p.state) === "met") {
      met[i] = true;
    } else if (error === null) {
      error = cancelReason(p.ref, p.id, p.state);
    }
  }
  const state = error !== null ? "cancelled" : waiting > 0 ? "blocked" : releasedState(run_at, now);
  return { state, waiting_on: error !== null ? 0 : waiting, met, error };
}

/**
 * What one round of ended prerequisites does: `edges` are the unmet edges out of them whose
 * dependents are still blocked. A dependent cancelled by any of its edges is cancelled, and
 * its other edges of the round are not met.
 */
export function planRelease(edges: readonly EndedEdge[]): ReleasePlan {
  const cancel = new Map<number, string>();
  for (const edge of edges) {
    if (cancel.has(edge.job_id)) continue;
    if (edgeOutcome(edge.on_failure, edge.prereq_state) === "cancel") {
      cancel.set(edge.job_id, cancelReason(edge.prereq_ref, edge.prereq_id, edge.prereq_state));
    }
  }
  const met: [number, number][] = [];
  for (const edge of edges) {
    if (!cancel.has(edge.job_id)) met.push([edge.prereq_id, edge.job_id]);
  }
  return { met, cancel };
}

/**
 * A released job's prerequisites' outcomes, in `depends_on` order, within
 * {@linkcode MAX_OUTCOME_BYTES} in all: a failed prerequisite of an `ignore` edge is left out;
 * an outcome whose result does not fit comes without it (`result` null, `result_omitted`
 * true); once not even that fits, the rest are left out and counted in `omitted`.
 */
export function outcomesOf(rows: readonly OutcomeRow[]): Outcomes {
  const outcomes: Outcome[] = [];
  let room = MAX_OUTCOME_BYTES;
  let omitted = 0;
  for (const row of rows) {
    const failed = row.state === "dead" || row.state === "cancelled";
    if (failed && row.on_failure === "ignore") continue;
    if (omitted > 0) {
      omitted++;
      continue;
    }
    // JSON text is mostly ASCII: lengths bound its bytes closely enough for a cap.
    const bare = OUTCOME_OVERHEAD + JSON.stringify(row.ref).length +
      JSON.stringify(row.last_error).length;
    const whole = bare + (row.result?.length ?? 0);
    if (whole <= room) {
      room -= whole;
      outcomes.push({ ...pick(row), result: row.result, result_omitted: false });
    } else if (bare <= room) {
      room -= bare;
      outcomes.push({ ...pick(row), result: null, result_omitted: row.result !== null });
    } else {
      omitted++;
    }
  }
  return { outcomes, omitted };
}

/** An outcome's bytes beside its ref, result and error (names, id, state), at most. */
const OUTCOME_OVERHEAD = 96;

function pick(row: OutcomeRow) {
  return { ref: row.ref, id: row.id, state: row.state, last_error: row.last_error };
}

/**
 * Checks new nodes and answers their creation order: every node after its prerequisites among
 * them. `existing` holds the refs already in the flow (nodes added to a running flow may depend
 * on them). Throws `validation_failed` naming the node for a duplicate, unknown or empty ref, a
 * self-edge, a repeated edge, a cycle, a keyed job, or a request over the limits.
 */
export function checkFlowNodes(
  nodes: readonly NewFlowNode[],
  existing: ReadonlySet<string> = new Set(),
): number[] {
  if (nodes.length === 0) throw invalid("nodes", "expected at least one node");
  if (nodes.length > MAX_FLOW_NODES) {
    throw invalid("nodes", `at most ${MAX_FLOW_NODES} nodes per request, got ${nodes.length}`);
  }
  const index = new Map<string, number>();
  let edges = 0;
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i];
    const ref = node.ref;
    if (ref.length === 0 || ref.length > MAX_REF_CHARS) {
      throw invalid(`nodes[${i}].ref`, `expected 1 to ${MAX_REF_CHARS} characters`);
    }
    if (index.has(ref) || existing.has(ref)) {
      throw invalid(`nodes[${i}].ref`, `"${ref}" is used by another node of the flow`);
    }
    if (node.job.key !== null) {
      throw invalid(`nodes[${i}].key`, "a flow's jobs carry no key: give the flow one");
    }
    index.set(ref, i);
    edges += node.depends_on.length;
  }
  if (edges > MAX_FLOW_EDGES) {
    throw invalid("nodes", `at most ${MAX_FLOW_EDGES} edges per request, got ${edges}`);
  }
  // Kahn's algorithm over the new nodes; edges to existing nodes constrain nothing here.
  const waiting = new Array<number>(nodes.length).fill(0);
  const dependents: number[][] = nodes.map(() => []);
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i];
    if (node.depends_on.length > MAX_NODE_PREREQUISITES) {
      throw invalid(
        `nodes[${i}].depends_on`,
        `at most ${MAX_NODE_PREREQUISITES} prerequisites per node`,
      );
    }
    const seen = new Set<string>();
    for (let e = 0; e < node.depends_on.length; e++) {
      const ref = node.depends_on[e].ref;
      const field = `nodes[${i}].depends_on[${e}]`;
      if (ref === node.ref) throw invalid(field, `node "${ref}" cannot depend on itself`);
      if (seen.has(ref)) throw invalid(field, `"${ref}" is listed twice`);
      seen.add(ref);
      const from = index.get(ref);
      if (from === undefined) {
        if (!existing.has(ref)) throw invalid(field, `no node of the flow has ref "${ref}"`);
        continue;
      }
      waiting[i]++;
      dependents[from].push(i);
    }
  }
  const order: number[] = [];
  for (let i = 0; i < nodes.length; i++) if (waiting[i] === 0) order.push(i);
  for (let k = 0; k < order.length; k++) {
    for (const next of dependents[order[k]]) {
      if (--waiting[next] === 0) order.push(next);
    }
  }
  if (order.length < nodes.length) {
    const stuck = onCycle(nodes, index, waiting);
    throw invalid(
      `nodes[${stuck}].depends_on`,
      `node "${nodes[stuck].ref}" is on a cycle: its prerequisites depend on it`,
    );
  }
  return order;
}

/**
 * A node on a cycle, once Kahn's algorithm has stopped: from any node still waiting, following
 * a prerequisite still waiting must come back to a node already seen.
 */
function onCycle(
  nodes: readonly NewFlowNode[],
  index: ReadonlyMap<string, number>,
  waiting: readonly number[],
): number {
  const seen = new Set<number>();
  let at = waiting.findIndex((n) => n > 0);
  while (!seen.has(at)) {
    seen.add(at);
    for (const edge of nodes[at].depends_on) {
      const from = index.get(edge.ref);
      if (from !== undefined && waiting[from] > 0) {
        at = from;
        break;
      }
    }
  }
  return at;
}

/** The `not_found` error about a flow. */
export function flowNotFound(id: number): TegamiError {
  return new TegamiError("not_found", `Cannot find flow ${id}: no such flow`);
}

/** The `validation_failed` error of a job asked to add nodes to a flow it is not part of. */
export function notInFlow(id: number): TegamiError {
  return invalid("id", `job ${id} is not a node of a flow: only a flow's running job adds nodes`);
}
