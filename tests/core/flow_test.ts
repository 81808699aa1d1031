import assert from "node:assert/strict";
import {
  checkFlowNodes,
  edgeOutcome,
  MAX_OUTCOME_BYTES,
  type NewFlowNode,
  type OutcomeRow,
  outcomesOf,
  planRelease,
  startOf,
} from "../../lib/core/flow.ts";
import { TegamiError } from "../../lib/core/errors.ts";

function node(ref: string, deps: string[] = [], key: string | null = null): NewFlowNode {
  return {
    ref,
    queue: "q",
    job: {
      payload: "{}",
      priority: 0,
      key,
      run_at: 0,
      max_attempts: null,
      lease_ms: null,
      backoff: null,
    },
    depends_on: deps.map((ref) => ({ ref, on_failure: "cancel" })),
  };
}

function refusal(nodes: NewFlowNode[], existing?: Set<string>): string {
  try {
    checkFlowNodes(nodes, existing);
  } catch (error) {
    assert.ok(error instanceof TegamiError);
    assert.equal(error.code, "validation_failed");
    return error.message;
  }
  assert.fail("expected a refusal");
}

Deno.test("checkFlowNodes answers prerequisites first", () => {
  const order = checkFlowNodes([node("c", ["a", "b"]), node("b", ["a"]), node("a")]);
  assert.deepEqual(order, [2, 1, 0]);
});

Deno.test("checkFlowNodes names the node of every refusal", () => {
  assert.match(refusal([node("a"), node("a")]), /nodes\[1\]\.ref.*"a" is used/);
  assert.match(refusal([node("a", ["zz"])]), /nodes\[0\]\.depends_on\[0\].*no node.*"zz"/);
  assert.match(refusal([node("a", ["a"])]), /cannot depend on itself/);
  assert.match(refusal([node("b"), node("a", ["b", "b"])]), /listed twice/);
  assert.match(refusal([node("a", [], "k")]), /nodes\[0\]\.key/);
  assert.match(refusal([node("")]), /nodes\[0\]\.ref/);
  assert.match(refusal([]), /at least one node/);
  assert.match(refusal([node("x")], new Set(["x"])), /"x" is used/);
  // A cycle is named by a node on it, not one downstream of it.
  const message = refusal([node("down", ["b"]), node("a", ["b"]), node("b", ["a"])]);
  assert.match(message, /node "(a|b)" is on a cycle/);
});

Deno.test("checkFlowNodes lets new nodes depend on existing ones", () => {
  assert.deepEqual(checkFlowNodes([node("n", ["old"])], new Set(["old"])), [0]);
});

Deno.test("an edge meets on done, and on failure unless its rule cancels", () => {
  assert.equal(edgeOutcome("cancel", "done"), "met");
  assert.equal(edgeOutcome("cancel", "dead"), "cancel");
  assert.equal(edgeOutcome("cancel", "cancelled"), "cancel");
  assert.equal(edgeOutcome("ignore", "dead"), "met");
  assert.equal(edgeOutcome("run", "cancelled"), "met");
});

Deno.test("planRelease cancels a dependent once and meets no edge of it", () => {
  const plan = planRelease([
    { prereq_id: 1, prereq_ref: "a", prereq_state: "done", job_id: 9, on_failure: "cancel" },
    { prereq_id: 2, prereq_ref: "b", prereq_state: "dead", job_id: 9, on_failure: "cancel" },
    { prereq_id: 2, prereq_ref: "b", prereq_state: "dead", job_id: 8, on_failure: "run" },
  ]);
  assert.deepEqual(plan.met, [[2, 8]]);
  assert.deepEqual([...plan.cancel], [[9, 'Prerequisite "b" (job 2) ended dead']]);
});

Deno.test("startOf resolves edges to ended prerequisites at once", () => {
  const base = { ref: "p", id: 1, on_failure: "cancel" as const };
  assert.deepEqual(startOf([{ ...base, state: "done" }], 0, 10), {
    state: "pending",
    waiting_on: 0,
    met: [true],
    error: null,
  });
  assert.deepEqual(startOf([{ ...base, state: "done" }], 50, 10).state, "delayed");
  assert.deepEqual(startOf([{ ...base, state: "leased" }], 0, 10).state, "blocked");
  assert.deepEqual(startOf([{ ...base, state: "dead" }], 0, 10), {
    state: "cancelled",
    waiting_on: 0,
    met: [false],
    error: 'Prerequisite "p" (job 1) ended dead',
  });
});

Deno.test("outcomesOf stays within its cap and says what it left out", () => {
  const row = (i: number, result: string | null, state: OutcomeRow["state"] = "done") => ({
    on_failure: "cancel" as const,
    id: i,
    ref: `r${i}`,
    state,
    result,
    last_error: null,
  });
  const big = JSON.stringify("x".repeat(100_000));
  const out = outcomesOf([
    row(1, big),
    row(2, big),
    row(3, big),
    row(4, '"small"'),
    { ...row(5, null, "dead"), on_failure: "ignore" },
  ]);
  assert.deepEqual(out.outcomes.map((o) => [o.ref, o.result_omitted]), [
    ["r1", false],
    ["r2", false],
    ["r3", true],
    ["r4", false],
  ]);
  assert.equal(out.omitted, 0);
  // Many outcomes: entries past the cap are counted, not carried.
  const many = Array.from({ length: 20_000 }, (_, i) => row(i, null));
  const capped = outcomesOf(many.map((r) => ({ ...r, ref: "r".repeat(200) })));
  assert.ok(capped.omitted > 0);
  assert.equal(capped.outcomes.length + capped.omitted, 20_000);
  assert.ok(JSON.stringify(capped.outcomes).length <= MAX_OUTCOME_BYTES);
});
