/**
 * The flow campaign's checker on hand-made histories: a clean one passes, and each rule fails
 * the history that breaks it.
 */

import assert from "node:assert/strict";
import { checkFlows, type FlowEvent, type FlowFindingKind } from "./flow_checker.ts";

/** A flow "k" of a → b, created (jobs 1 and 2), run and acked, then read back done. */
function cleanHistory(): FlowEvent[] {
  return [
    { type: "server_start", at: 0, epoch: 1, server: 0 },
    {
      type: "flow_send",
      at: 10,
      op: 1,
      key: "k",
      nodes: [{ ref: "a", deps: [] }, { ref: "b", deps: ["a"] }],
    },
    { type: "flow_ok", at: 12, op: 1, id: 7, deduplicated: false, jobs: { a: 1, b: 2 } },
    deliver(20, 1, "k/a", "ta", 1, null),
    { type: "settle", at: 21, op: 2, kind: "ack", id: 1, token: "ta" },
    { type: "settle_ok", at: 22, op: 2 },
    deliver(23, 2, "k/b", "tb", 1, [{ ref: "a", id: 1, state: "done" }]),
    { type: "settle", at: 24, op: 3, kind: "ack", id: 2, token: "tb" },
    { type: "settle_ok", at: 25, op: 3 },
    final([[1, "k/a", "done"], [2, "k/b", "done"]]),
  ];
}

function deliver(
  at: number,
  id: number,
  uid: string,
  token: string,
  attempt: number,
  prerequisites: { ref: string; id: number; state: string }[] | null,
): FlowEvent {
  const ref = uid.slice(uid.lastIndexOf("/") + 1);
  return {
    type: "deliver",
    at,
    conn: 1,
    id,
    uid,
    token,
    attempt,
    flow: { id: 7, ref },
    prerequisites,
  };
}

function final(jobs: [number, string, string][]): FlowEvent {
  return {
    type: "final",
    at: 100,
    integrity: "ok",
    jobs: jobs.map(([id, uid, state]) => ({ id, uid, state, attempts: 1 })),
  };
}

/** The history with the event at `index` replaced by `events` (none: removed). */
function edited(index: number, ...events: FlowEvent[]): FlowEvent[] {
  const history = cleanHistory();
  history.splice(index, 1, ...events);
  return history;
}

function kinds(events: FlowEvent[]): FlowFindingKind[] {
  return checkFlows(events).findings.map((finding) => finding.kind);
}

Deno.test("checkFlows() passes a flow created, released after its prerequisite's ack and done", () => {
  const report = checkFlows(cleanHistory());
  assert.deepEqual(report.findings, []);
  assert.equal(report.figures.flows_acknowledged, 1);
  assert.equal(report.figures.nodes_stored, 2);
  assert.equal(report.figures.released_deliveries, 1);
  assert.equal(report.figures.acks_ok, 2);
});

Deno.test("checkFlows() reports a node of an answered flow missing from the database", () => {
  assert.deepEqual(kinds(edited(9, final([[1, "k/a", "done"]]))), ["lost node"]);
});

Deno.test("checkFlows() reports an unanswered flow stored in part, and accepts it whole or absent", () => {
  const unanswered = (jobs: [number, string, string][]) => {
    const history = edited(2, { type: "flow_info", at: 12, op: 1, error: "connection reset" });
    history[history.length - 1] = final(jobs);
    return history;
  };
  assert.deepEqual(kinds(unanswered([[1, "k/a", "done"]])), ["partial flow"]);
  assert.deepEqual(kinds(unanswered([[1, "k/a", "done"], [2, "k/b", "done"]])), []);
  const absent = cleanHistory().slice(0, 2);
  absent.push({ type: "flow_info", at: 12, op: 1, error: "timeout" }, final([]));
  assert.deepEqual(kinds(absent), []);
});

Deno.test("checkFlows() reports a retried flow stored twice or answered as two flows", () => {
  assert.deepEqual(
    kinds(edited(9, final([[1, "k/a", "done"], [2, "k/b", "done"], [3, "k/a", "done"]]))),
    ["duplicated flow"],
  );
  const twice = edited(
    2,
    { type: "flow_info", at: 11, op: 1, error: "timeout" },
    { type: "flow_send", at: 12, op: 9, key: "k", nodes: [] },
    { type: "flow_ok", at: 13, op: 9, id: 7, deduplicated: true, jobs: { a: 1, b: 2 } },
    { type: "flow_send", at: 14, op: 10, key: "k", nodes: [] },
    { type: "flow_ok", at: 15, op: 10, id: 8, deduplicated: false, jobs: { a: 3, b: 4 } },
  );
  assert.deepEqual(kinds(twice), ["duplicated flow"]);
});

Deno.test("checkFlows() reports a node left blocked or pending after the drain", () => {
  assert.deepEqual(kinds(edited(9, final([[1, "k/a", "done"], [2, "k/b", "blocked"]]))), [
    "stuck",
  ]);
});

Deno.test("checkFlows() passes a prerequisite nacked dead and its dependent cancelled, unrun", () => {
  const history = cleanHistory().slice(0, 4);
  history.push(
    { type: "settle", at: 21, op: 2, kind: "nack", id: 1, token: "ta", dead: true },
    { type: "settle_ok", at: 22, op: 2 },
    final([[1, "k/a", "dead"], [2, "k/b", "cancelled"]]),
  );
  const report = checkFlows(history);
  assert.deepEqual(report.findings, []);
  assert.equal(report.figures.dead_nodes, 1);
  assert.equal(report.figures.cancelled_nodes, 1);
  // Run all the same: delivered without an ack of its prerequisite.
  history.splice(6, 0, deliver(23, 2, "k/b", "tb", 1, [{ ref: "a", id: 1, state: "dead" }]));
  assert.deepEqual(kinds(history).sort(), ["early release", "wrong outcomes"]);
});

Deno.test("checkFlows() reports a node that ends otherwise than its prerequisites say", () => {
  // Dead with no dead nack.
  assert.deepEqual(kinds(edited(9, final([[1, "k/a", "done"], [2, "k/b", "dead"]]))), [
    "wrong end",
  ]);
  // Cancelled with every prerequisite done.
  assert.deepEqual(kinds(edited(9, final([[1, "k/a", "done"], [2, "k/b", "cancelled"]]))), [
    "wrong end",
  ]);
  // Done though its prerequisite died.
  const history = cleanHistory().slice(0, 4);
  history.push(
    { type: "settle", at: 21, op: 2, kind: "nack", id: 1, token: "ta", dead: true },
    { type: "settle_info", at: 22, op: 2, error: "socket closed" },
    final([[1, "k/a", "dead"], [2, "k/b", "done"]]),
  );
  assert.deepEqual(kinds(history), ["wrong end"]);
});

Deno.test("checkFlows() reports a dependent delivered before its prerequisite's ack was sent", () => {
  const history = cleanHistory();
  // b arrives before a's ack is sent.
  const b = history.splice(6, 1)[0];
  history.splice(4, 0, { ...b, at: 20.5 });
  assert.deepEqual(kinds(history), ["early release"]);
  // An ack that was refused releases nothing.
  const refused = edited(5, { type: "settle_fail", at: 22, op: 2, code: "lease_lost" });
  assert.deepEqual(kinds(refused), ["early release"]);
  // One whose answer never came may have.
  const unknown = edited(5, { type: "settle_info", at: 22, op: 2, error: "socket closed" });
  assert.deepEqual(kinds(unknown), []);
});

Deno.test("checkFlows() reports a delivery whose outcomes or flow are not its node's", () => {
  assert.deepEqual(kinds(edited(6, deliver(23, 2, "k/b", "tb", 1, []))), ["wrong outcomes"]);
  assert.deepEqual(
    kinds(edited(6, deliver(23, 2, "k/b", "tb", 1, [{ ref: "a", id: 1, state: "dead" }]))),
    ["wrong outcomes"],
  );
  assert.deepEqual(
    kinds(edited(3, deliver(20, 1, "k/a", "ta", 1, [{ ref: "x", id: 9, state: "done" }]))),
    ["wrong outcomes"],
  );
  const otherFlow = { ...deliver(20, 1, "k/a", "ta", 1, null), flow: { id: 8, ref: "a" } };
  assert.deepEqual(kinds(edited(3, otherFlow as FlowEvent)), ["wrong outcomes"]);
});

Deno.test("checkFlows() reports a job delivered again after its ack was answered", () => {
  const history = cleanHistory();
  history.splice(9, 0, deliver(30, 2, "k/b", "tb2", 2, [{ ref: "a", id: 1, state: "done" }]));
  assert.deepEqual(kinds(history), ["redelivered after ack"]);
  // Once more, acked too: two tokens acked.
  history.splice(
    10,
    0,
    { type: "settle", at: 31, op: 4, kind: "ack", id: 2, token: "tb2" },
    { type: "settle_ok", at: 32, op: 4 },
  );
  assert.deepEqual(kinds(history).sort(), ["acked twice", "redelivered after ack"]);
});

Deno.test("checkFlows() counts a release across a kill, and reports jobs no one sent", () => {
  const history = cleanHistory();
  history.splice(6, 0, { type: "server_kill", at: 22.5, epoch: 1, server: 0 });
  assert.equal(checkFlows(history).figures.releases_across_kill, 1);
  assert.deepEqual(
    kinds(edited(9, final([[1, "k/a", "done"], [2, "k/b", "done"], [5, "z/q", "done"]]))),
    ["unexpected"],
  );
  assert.deepEqual(
    kinds(
      edited(
        9,
        {
          ...final([[1, "k/a", "done"], [2, "k/b", "done"]]),
          integrity: "row 3 missing",
        } as FlowEvent,
      ),
    ),
    ["integrity"],
  );
});

/** Flow "k" of a → b over an edge of `rule`: a is nacked dead, b runs after with `carried`. */
function failedPrerequisite(
  rule: "ignore" | "run",
  carried: { ref: string; id: number; state: string }[],
  deliveredAt = 23,
  bEnds = "done",
): FlowEvent[] {
  return [
    { type: "server_start", at: 0, epoch: 1, server: 0 },
    {
      type: "flow_send",
      at: 10,
      op: 1,
      key: "k",
      nodes: [{ ref: "a", deps: [] }, { ref: "b", deps: ["a"], rules: [rule] }],
    },
    { type: "flow_ok", at: 12, op: 1, id: 7, deduplicated: false, jobs: { a: 1, b: 2 } },
    deliver(20, 1, "k/a", "ta", 1, null),
    { type: "settle", at: 21, op: 2, kind: "nack", id: 1, token: "ta", dead: true },
    { type: "settle_ok", at: 22, op: 2 },
    deliver(deliveredAt, 2, "k/b", "tb", 1, carried),
    { type: "settle", at: 24, op: 3, kind: "ack", id: 2, token: "tb" },
    { type: "settle_ok", at: 25, op: 3 },
    final([[1, "k/a", "dead"], [2, "k/b", bEnds]]),
  ];
}

Deno.test("checkFlows() passes a dependent run after its ignore or run prerequisite died", () => {
  assert.deepEqual(kinds(failedPrerequisite("ignore", [])), []);
  assert.deepEqual(kinds(failedPrerequisite("run", [{ ref: "a", id: 1, state: "dead" }])), []);
});

Deno.test("checkFlows() reports an ignore or run dependent released early, with wrong outcomes or ended wrong", () => {
  const dead = [{ ref: "a", id: 1, state: "dead" }];
  // Delivered before the dead nack was sent.
  assert.deepEqual(kinds(failedPrerequisite("run", dead, 20.5)), ["early release"]);
  // An ignore edge's failed prerequisite is left out; a run edge's is carried.
  assert.deepEqual(kinds(failedPrerequisite("ignore", dead)), ["wrong outcomes"]);
  assert.deepEqual(kinds(failedPrerequisite("run", [])), ["wrong outcomes"]);
  // Neither cancels: a cancelled dependent is wrong.
  const history = failedPrerequisite("ignore", []).slice(0, 6);
  history.push(final([[1, "k/a", "dead"], [2, "k/b", "cancelled"]]));
  assert.deepEqual(kinds(history), ["wrong end"]);
});

Deno.test("checkFlows() releases a run dependent of a node cancelled by a death before it", () => {
  // x dies; c, on x by a cancel edge, is cancelled; b, on c by a run edge, runs after x's nack.
  const history = (deliveredAt: number): FlowEvent[] => [
    {
      type: "flow_send",
      at: 10,
      op: 1,
      key: "k",
      nodes: [
        { ref: "x", deps: [] },
        { ref: "c", deps: ["x"] },
        { ref: "b", deps: ["c"], rules: ["run"] },
      ],
    },
    { type: "flow_ok", at: 12, op: 1, id: 7, deduplicated: false, jobs: { x: 1, c: 2, b: 3 } },
    deliver(20, 1, "k/x", "tx", 1, null),
    { type: "settle", at: 21, op: 2, kind: "nack", id: 1, token: "tx", dead: true },
    { type: "settle_ok", at: 22, op: 2 },
    deliver(deliveredAt, 3, "k/b", "tb", 1, [{ ref: "c", id: 2, state: "cancelled" }]),
    { type: "settle", at: 24, op: 3, kind: "ack", id: 3, token: "tb" },
    { type: "settle_ok", at: 25, op: 3 },
    final([[1, "k/x", "dead"], [2, "k/c", "cancelled"], [3, "k/b", "done"]]),
  ];
  assert.deepEqual(kinds(history(23)), []);
  assert.deepEqual(kinds(history(20.5)), ["early release"]);
});
