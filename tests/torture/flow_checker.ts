/**
 * The flow crash campaign's checker (`flow_campaign.ts` writes the history): a pure function of
 * the events, so it is tested on hand-made histories (`flow_checker_test.ts`). It judges what
 * flows promise across crashes:
 *
 * - `lost node`: a flow whose create was answered (201, or 200 for a duplicate key) has every
 *   node stored under the ids the answer gave; `partial flow`: a flow whose create got no
 *   answer is stored whole or not at all; `duplicated flow`: a key's flow is stored once,
 *   whatever the retries;
 * - `stuck`: once the queue is drained, no stored node is left `blocked` (a release lost) or
 *   `pending`, `delayed` or `leased`;
 * - `wrong end`: a node ends as the rules say: `dead` only if a consumer nacked it dead,
 *   `cancelled` exactly when a prerequisite of a `cancel` edge ended dead or cancelled, else
 *   `done` (or `dead`);
 * - `early release`: a node is delivered only once each of its prerequisites could have ended:
 *   an ack of it was sent before the delivery (the ack that released it cannot come later), or,
 *   on an `ignore` or `run` edge, a dead nack of it, or (cancelled) of what cancelled it; a
 *   settle refused does not count;
 * - `wrong outcomes`: a released node's delivery names its prerequisites, in `depends_on`
 *   order, with the state they ended in (`done` on `cancel` edges; a failed one of an `ignore`
 *   edge left out); its `flow` names its flow and ref;
 * - `redelivered after ack`: no delivery of a job has a later attempt than one whose ack was
 *   answered ok; `acked twice`: no two tokens of one job were both acked ok;
 * - `unexpected`: every stored job of the queue was sent; `integrity`: the database's own check.
 *
 * @module
 */

/** One node of a flow as a producer sent it: its ref and its prerequisites' refs. */
export interface SentNode {
  /** Its ref. */
  ref: string;
  /** Its prerequisites' refs, in order. */
  deps: string[];
  /** Each edge's `on_failure`, in the same order. @default every one `cancel` */
  rules?: EdgeRule[];
}

/** What a prerequisite's failure does to the dependent (core/flow.ts `OnFailure`). */
export type EdgeRule = "cancel" | "ignore" | "run";

/** The rule of `node`'s edge `i`. */
function ruleOf(node: SentNode, i: number): EdgeRule {
  return node.rules?.[i] ?? "cancel";
}

/** Whether a job in `state` failed (a prerequisite's failure). */
function failedState(state: string | undefined): boolean {
  return state === "dead" || state === "cancelled";
}

/** A prerequisite's outcome as a delivery carried it. */
export interface SeenOutcome {
  /** Its ref. */
  ref: string;
  /** Its job id. */
  id: number;
  /** Its state. */
  state: string;
}

/** An event of a flow campaign's history; `at` is `Date.now()` of the campaign. */
export type FlowEvent =
  /** A server is listening (again). */
  | { type: "server_start"; at: number; epoch: number; server: number }
  /** A server was SIGKILLed (recorded just before the signal). */
  | { type: "server_kill"; at: number; epoch: number; server: number }
  /** A producer sent `POST /v1/flows` with `key` (each retry is another op, same key). */
  | { type: "flow_send"; at: number; op: number; key: string; nodes: SentNode[] }
  /** It was answered 2xx: the flow's id and its jobs' ids by ref. */
  | {
    type: "flow_ok";
    at: number;
    op: number;
    id: number;
    deduplicated: boolean;
    jobs: Record<string, number>;
  }
  /** It was refused: nothing was stored. */
  | { type: "flow_fail"; at: number; op: number; status: number; code: string }
  /** Its outcome is unknown (connection cut, timeout, an outcome-unknown error). */
  | { type: "flow_info"; at: number; op: number; error: string }
  /** A job frame arrived on consumer socket `conn`. */
  | {
    type: "deliver";
    at: number;
    conn: number;
    id: number;
    /** The `uid` of its payload: `key/ref`. */
    uid: string;
    token: string;
    attempt: number;
    /** Its `flow` member, or null. */
    flow: { id: number; ref: string } | null;
    /** Its `prerequisites` member, or null when absent. */
    prerequisites: SeenOutcome[] | null;
  }
  /** A consumer sent an ack or a nack. */
  | {
    type: "settle";
    at: number;
    op: number;
    kind: "ack" | "nack";
    id: number;
    token: string;
    /** A nack that sends the job to the dead letters (`dead: true`). */
    dead?: boolean;
  }
  /** It was answered ok. */
  | { type: "settle_ok"; at: number; op: number }
  /** It was refused. */
  | { type: "settle_fail"; at: number; op: number; code: string }
  /** Its outcome is unknown. */
  | { type: "settle_info"; at: number; op: number; error: string }
  /** The database after the servers stopped: the queue's jobs, and its integrity check. */
  | {
    type: "final";
    at: number;
    integrity: string;
    jobs: { id: number; uid: string; state: string; attempts: number }[];
  };

/** The kinds of failure the checker reports. */
export type FlowFindingKind =
  | "lost node"
  | "partial flow"
  | "duplicated flow"
  | "stuck"
  | "wrong end"
  | "early release"
  | "wrong outcomes"
  | "redelivered after ack"
  | "acked twice"
  | "unexpected"
  | "integrity";

/** Every finding kind, in report order. */
export const FLOW_FINDING_KINDS: readonly FlowFindingKind[] = [
  "lost node",
  "partial flow",
  "duplicated flow",
  "stuck",
  "wrong end",
  "early release",
  "wrong outcomes",
  "redelivered after ack",
  "acked twice",
  "unexpected",
  "integrity",
];

/** One failure. */
export interface FlowFinding {
  /** What kind. */
  kind: FlowFindingKind;
  /** The node concerned (`key/ref`), when known. */
  uid?: string;
  /** One sentence for people. */
  detail: string;
}

/** What happened, in numbers. */
export interface FlowFigures {
  /** Server starts and SIGKILLs. */
  starts: number;
  kills: number;
  /** Flows sent (distinct keys) and `POST /v1/flows` calls by outcome. */
  flows_sent: number;
  create_calls: number;
  create_ok: number;
  create_failed: number;
  create_unknown: number;
  /** Creates answered `deduplicated: true` (a retry after an unknown outcome). */
  deduplicated: number;
  /** Flows whose create was answered, and their nodes. */
  flows_acknowledged: number;
  nodes_acknowledged: number;
  /** Flows stored at the end, and their nodes. */
  flows_stored: number;
  nodes_stored: number;
  /** Deliveries, those of released nodes (with prerequisites), and those after a job's first. */
  deliveries: number;
  released_deliveries: number;
  redeliveries: number;
  /** Acks and nacks by outcome; nacks that send the job to the dead letters. */
  acks_ok: number;
  acks_refused: number;
  acks_unknown: number;
  nacks: number;
  dead_nacks: number;
  /** Stored nodes that ended dead, and cancelled because a prerequisite failed. */
  dead_nodes: number;
  cancelled_nodes: number;
  /**
   * Nodes whose last prerequisite's ack was sent before a SIGKILL and which were first
   * delivered after it: releases across a kill.
   */
  releases_across_kill: number;
}

/** The checker's verdict. */
export interface FlowReport {
  /** True when there is no finding. */
  ok: boolean;
  /** Every failure, in the order found. */
  findings: FlowFinding[];
  /** Findings per kind. */
  counts: Record<FlowFindingKind, number>;
  /** What happened. */
  figures: FlowFigures;
}

/** `key/ref` → [key, ref] (a ref holds no slash). */
function splitUid(uid: string): [string, string] {
  const at = uid.lastIndexOf("/");
  return [uid.slice(0, at), uid.slice(at + 1)];
}

/** Checks a flow campaign's history; see the module doc for the rules. */
export function checkFlows(events: readonly FlowEvent[]): FlowReport {
  const findings: FlowFinding[] = [];
  const find = (kind: FlowFindingKind, detail: string, uid?: string) =>
    findings.push({ kind, detail, uid });
  const figures: FlowFigures = {
    starts: 0,
    kills: 0,
    flows_sent: 0,
    create_calls: 0,
    create_ok: 0,
    create_failed: 0,
    create_unknown: 0,
    deduplicated: 0,
    flows_acknowledged: 0,
    nodes_acknowledged: 0,
    flows_stored: 0,
    nodes_stored: 0,
    deliveries: 0,
    released_deliveries: 0,
    redeliveries: 0,
    acks_ok: 0,
    acks_refused: 0,
    acks_unknown: 0,
    nacks: 0,
    dead_nacks: 0,
    dead_nodes: 0,
    cancelled_nodes: 0,
    releases_across_kill: 0,
  };

  // ---- what was sent and answered ----
  const sent = new Map<string, SentNode[]>();
  const keyOfOp = new Map<number, string>();
  const answers = new Map<string, { id: number; jobs: Record<string, number> }>();
  const settles = new Map<
    number,
    {
      at: number;
      kind: "ack" | "nack";
      dead: boolean;
      id: number;
      token: string;
      outcome: string | null;
    }
  >();
  const deliveries: Extract<FlowEvent, { type: "deliver" }>[] = [];
  const kills: number[] = [];
  let final: Extract<FlowEvent, { type: "final" }> | null = null;
  for (const e of events) {
    switch (e.type) {
      case "server_start":
        figures.starts++;
        break;
      case "server_kill":
        figures.kills++;
        kills.push(e.at);
        break;
      case "flow_send":
        figures.create_calls++;
        if (!sent.has(e.key)) sent.set(e.key, e.nodes);
        keyOfOp.set(e.op, e.key);
        break;
      case "flow_ok": {
        figures.create_ok++;
        if (e.deduplicated) figures.deduplicated++;
        const key = keyOfOp.get(e.op)!;
        const before = answers.get(key);
        if (before === undefined) answers.set(key, { id: e.id, jobs: e.jobs });
        else if (before.id !== e.id || JSON.stringify(before.jobs) !== JSON.stringify(e.jobs)) {
          find(
            "duplicated flow",
            `flow "${key}" was answered as flow ${before.id} and again as flow ${e.id}`,
          );
        }
        break;
      }
      case "flow_fail":
        figures.create_failed++;
        break;
      case "flow_info":
        figures.create_unknown++;
        break;
      case "deliver":
        figures.deliveries++;
        if (e.prerequisites !== null) figures.released_deliveries++;
        deliveries.push(e);
        break;
      case "settle":
        settles.set(e.op, {
          at: e.at,
          kind: e.kind,
          dead: e.dead === true,
          id: e.id,
          token: e.token,
          outcome: null,
        });
        if (e.kind === "nack") figures.nacks++;
        if (e.dead === true) figures.dead_nacks++;
        break;
      case "settle_ok":
      case "settle_fail":
      case "settle_info": {
        const settle = settles.get(e.op);
        if (settle === undefined || settle.outcome !== null) break;
        settle.outcome = e.type === "settle_ok" ? "ok" : e.type === "settle_fail" ? "fail" : "info";
        if (settle.kind === "ack") {
          if (e.type === "settle_ok") figures.acks_ok++;
          else if (e.type === "settle_fail") figures.acks_refused++;
          else figures.acks_unknown++;
        }
        break;
      }
      case "final":
        final = e;
        break;
    }
  }
  figures.flows_sent = sent.size;
  figures.flows_acknowledged = answers.size;
  for (const key of answers.keys()) figures.nodes_acknowledged += sent.get(key)?.length ?? 0;

  // ---- the database at the end ----
  /** Job id by `key/ref`, from the answers and the database. */
  const idOf = new Map<string, number>();
  for (const [key, answer] of answers) {
    for (const [ref, id] of Object.entries(answer.jobs)) idOf.set(`${key}/${ref}`, id);
  }
  /** Jobs a dead nack was sent for (answered ok, or not answered). */
  const deadNacked = new Set<number>();
  for (const settle of settles.values()) {
    if (settle.dead && settle.outcome !== "fail") deadNacked.add(settle.id);
  }
  if (final === null) {
    find("stuck", "the history has no final read of the database");
  } else {
    if (final.integrity !== "ok") find("integrity", `integrity check: ${final.integrity}`);
    const stored = new Map<string, { id: number; state: string }[]>();
    for (const job of final.jobs) {
      const [key, ref] = splitUid(job.uid);
      if (!sent.get(key)?.some((node) => node.ref === ref)) {
        find("unexpected", `job ${job.id} (${job.uid}) was never sent`, job.uid);
        continue;
      }
      stored.set(job.uid, [...stored.get(job.uid) ?? [], { id: job.id, state: job.state }]);
      if (!idOf.has(job.uid)) idOf.set(job.uid, job.id);
    }
    for (const [key, nodes] of sent) {
      const present = nodes.filter((node) => stored.has(`${key}/${node.ref}`));
      if (present.length > 0) {
        figures.flows_stored++;
        figures.nodes_stored += present.length;
      }
      const answer = answers.get(key);
      if (answer !== undefined) {
        for (const node of nodes) {
          const uid = `${key}/${node.ref}`;
          const rows = stored.get(uid) ?? [];
          if (!rows.some((row) => row.id === answer.jobs[node.ref])) {
            find(
              "lost node",
              `node "${node.ref}" (job ${
                answer.jobs[node.ref]
              }) of flow ${answer.id} ("${key}"), ` +
                `whose create was answered, is not stored`,
              uid,
            );
          }
        }
      } else if (present.length > 0 && present.length < nodes.length) {
        find(
          "partial flow",
          `flow "${key}", whose create got no answer, is stored with ${present.length} of its ` +
            `${nodes.length} nodes`,
        );
      }
      for (const node of nodes) {
        const uid = `${key}/${node.ref}`;
        const rows = stored.get(uid) ?? [];
        if (rows.length > 1) {
          find("duplicated flow", `node ${uid} is stored ${rows.length} times`, uid);
        }
        for (const row of rows) {
          const failed = node.deps.filter((dep, i) =>
            ruleOf(node, i) === "cancel" && failedState(stored.get(`${key}/${dep}`)?.[0]?.state)
          );
          if (row.state === "dead") figures.dead_nodes++;
          if (row.state === "cancelled") figures.cancelled_nodes++;
          if (!["done", "dead", "cancelled"].includes(row.state)) {
            find("stuck", `job ${row.id} (${uid}) is ${row.state} after the drain`, uid);
          } else if (row.state === "dead" && !deadNacked.has(row.id)) {
            find("wrong end", `job ${row.id} (${uid}) is dead, but no one nacked it dead`, uid);
          } else if (row.state === "cancelled" && failed.length === 0) {
            find(
              "wrong end",
              `job ${row.id} (${uid}) is cancelled, but no prerequisite of a cancel edge failed`,
              uid,
            );
          } else if (row.state !== "cancelled" && failed.length > 0) {
            find(
              "wrong end",
              `job ${row.id} (${uid}) is ${row.state}, but its prerequisite "${failed[0]}" failed`,
              uid,
            );
          }
        }
      }
    }
  }

  // ---- deliveries ----
  /** The sends of acks, and of dead nacks, by job id, in order. */
  const acksOf = new Map<number, { at: number; token: string; outcome: string | null }[]>();
  const deadNacksOf = new Map<number, number[]>();
  for (const settle of settles.values()) {
    if (settle.dead && settle.outcome !== "fail") {
      deadNacksOf.set(settle.id, [...deadNacksOf.get(settle.id) ?? [], settle.at]);
    }
    if (settle.kind !== "ack") continue;
    acksOf.set(settle.id, [...acksOf.get(settle.id) ?? [], settle]);
  }
  const finalState = new Map<string, string>();
  for (const job of final?.jobs ?? []) finalState.set(job.uid, job.state);
  /**
   * When node `uid` of flow `key` could first have ended by `t` as it finally did: its last
   * ack or dead nack sent by then, or for a cancelled node what cancelled it; null if nothing
   * sent by `t` ends it.
   */
  const endedBy = (key: string, uid: string, t: number, depth = 0): number | null => {
    const id = idOf.get(uid);
    const state = finalState.get(uid);
    if (id === undefined || depth > 64) return null;
    const last = (times: number[]) => {
      const before = times.filter((at) => at <= t);
      return before.length === 0 ? null : before[before.length - 1];
    };
    if (state === "dead") return last(deadNacksOf.get(id) ?? []);
    if (state === "cancelled") {
      const node = sent.get(key)?.find((n) => `${key}/${n.ref}` === uid);
      for (const [i, dep] of (node?.deps ?? []).entries()) {
        const depUid = `${key}/${dep}`;
        if (ruleOf(node!, i) !== "cancel" || !failedState(finalState.get(depUid))) continue;
        const at = endedBy(key, depUid, t, depth + 1);
        if (at !== null) return at;
      }
      return null;
    }
    return null;
  };
  const firstDelivery = new Map<string, number>();
  const attemptsSeen = new Map<number, Map<number, string>>();
  for (const d of deliveries) {
    const [key, ref] = splitUid(d.uid);
    const node = sent.get(key)?.find((n) => n.ref === ref);
    if (node === undefined) {
      find("unexpected", `job ${d.id} (${d.uid}) was delivered but never sent`, d.uid);
      continue;
    }
    const seen = attemptsSeen.get(d.id) ?? new Map<number, string>();
    attemptsSeen.set(d.id, seen);
    if (seen.size > 0) figures.redeliveries++;
    seen.set(d.attempt, d.token);
    if (!firstDelivery.has(d.uid)) firstDelivery.set(d.uid, d.at);
    const answer = answers.get(key);
    if (
      d.flow === null || d.flow.ref !== ref || (answer !== undefined && d.flow.id !== answer.id)
    ) {
      find(
        "wrong outcomes",
        `job ${d.id} (${d.uid}) came with flow ${JSON.stringify(d.flow)}`,
        d.uid,
      );
    }
    // Its prerequisites: each ended before this delivery (acked; on an ignore or run edge, also
    // nacked dead or cancelled for it), named in order with the state it ended in.
    let lastAck = -Infinity;
    const expected: string[] = [];
    for (const [i, dep] of node.deps.entries()) {
      const depUid = `${key}/${dep}`;
      const depId = idOf.get(depUid);
      const rule = ruleOf(node, i);
      const acks = (depId === undefined ? [] : acksOf.get(depId) ?? []).filter((a) =>
        a.at <= d.at && a.outcome !== "fail"
      );
      const failedAt = rule === "cancel" ? null : endedBy(key, depUid, d.at);
      if (acks.length === 0 && failedAt === null) {
        find(
          "early release",
          `job ${d.id} (${d.uid}) was delivered (attempt ${d.attempt}) before its prerequisite ` +
            `"${dep}" (job ${depId ?? "?"}, ${rule} edge) could have ended`,
          d.uid,
        );
      } else lastAck = Math.max(lastAck, acks.at(-1)?.at ?? -Infinity, failedAt ?? -Infinity);
      const state = finalState.get(depUid) ?? "?";
      if (rule === "cancel") expected.push(`${dep}:${depId ?? "?"}:done`);
      else if (!(rule === "ignore" && failedState(state))) {
        expected.push(`${dep}:${depId ?? "?"}:${state}`);
      }
    }
    const carried = d.prerequisites?.map((o) => `${o.ref}:${o.id}:${o.state}`) ?? [];
    if (
      (node.deps.length === 0 && d.prerequisites !== null) ||
      JSON.stringify(carried) !== JSON.stringify(expected)
    ) {
      find(
        "wrong outcomes",
        `job ${d.id} (${d.uid}) came with prerequisites [${carried.join(", ")}], expected ` +
          `[${expected.join(", ")}]`,
        d.uid,
      );
    }
    if (
      node.deps.length > 0 && firstDelivery.get(d.uid) === d.at &&
      kills.some((k) => k > lastAck && k < d.at)
    ) {
      figures.releases_across_kill++;
    }
  }
  for (const [id, seen] of attemptsSeen) {
    const acked = new Set<string>();
    for (const ack of acksOf.get(id) ?? []) if (ack.outcome === "ok") acked.add(ack.token);
    if (acked.size > 1) find("acked twice", `job ${id}: ${acked.size} tokens acked ok`);
    const ackedAttempts = [...seen].filter(([, token]) => acked.has(token)).map(([a]) => a);
    if (ackedAttempts.length === 0) continue;
    const first = Math.min(...ackedAttempts);
    const later = [...seen.keys()].filter((attempt) => attempt > first);
    if (later.length > 0) {
      find(
        "redelivered after ack",
        `job ${id}: attempt ${first} was acked ok, then attempt ${
          Math.max(...later)
        } was delivered`,
      );
    }
  }

  const counts = Object.fromEntries(FLOW_FINDING_KINDS.map((kind) => [kind, 0])) as Record<
    FlowFindingKind,
    number
  >;
  for (const finding of findings) counts[finding.kind]++;
  return { ok: findings.length === 0, findings, counts, figures };
}

/** The report as lines for people: the figures, then at most 20 findings. */
export function formatFlowReport(report: FlowReport): string {
  const f = report.figures;
  const lines = [
    `servers started ${f.starts}, SIGKILLed ${f.kills}`,
    `flows sent ${f.flows_sent} (create calls ${f.create_calls}: ok ${f.create_ok}, refused ` +
    `${f.create_failed}, unknown ${f.create_unknown}, deduplicated ${f.deduplicated}); ` +
    `acknowledged ${f.flows_acknowledged} flows of ${f.nodes_acknowledged} nodes; stored ` +
    `${f.flows_stored} flows of ${f.nodes_stored} nodes`,
    `deliveries ${f.deliveries} (of released nodes ${f.released_deliveries}, redeliveries ` +
    `${f.redeliveries}); releases across a kill ${f.releases_across_kill}`,
    `acks ok ${f.acks_ok}, refused ${f.acks_refused}, unknown ${f.acks_unknown}; nacks ${f.nacks} ` +
    `(dead ${f.dead_nacks}); nodes dead ${f.dead_nodes}, cancelled ${f.cancelled_nodes}`,
    `findings: ${FLOW_FINDING_KINDS.map((kind) => `${kind} ${report.counts[kind]}`).join(", ")}`,
  ];
  for (const finding of report.findings.slice(0, 20)) {
    lines.push(`  ${finding.kind}: ${finding.detail}`);
  }
  if (report.findings.length > 20) lines.push(`  … and ${report.findings.length - 20} more`);
  return lines.join("\n");
}
