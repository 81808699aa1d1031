import assert from "node:assert/strict";
import { TegamiError } from "../../lib/core/errors.ts";
import {
  everyJob,
  type FilterRow,
  filterView,
  jobMatches,
  jsonEqual,
  parseJobFilter,
  parsePayloadPath,
  readsPayload,
  valueAt,
} from "../../lib/core/job_filter.ts";

const ROW: FilterRow = {
  state: "dead",
  created_at: 1000,
  finished_at: 5000,
  last_error: "timeout calling billing",
  group: "tenant-7",
  key: "order:42",
  payload: '{"tenant":{"id":"acme","tags":["a","b"]},"n":1.0}',
};

function refused(value: unknown, field: string): void {
  assert.throws(() => parseJobFilter("q", value), (error: unknown) => {
    assert.ok(error instanceof TegamiError);
    assert.equal(error.code, "validation_failed");
    assert.ok(error.message.includes(`"${field}"`), error.message);
    return true;
  });
}

Deno.test("parsePayloadPath() splits on dots and refuses empty segments", () => {
  assert.deepEqual(parsePayloadPath("tenant.id"), ["tenant", "id"]);
  assert.deepEqual(parsePayloadPath("items.0.sku"), ["items", "0", "sku"]);
  for (const bad of ["", "a..b", ".a", "a.", 3, "x".repeat(257), Array(33).fill("a").join(".")]) {
    assert.throws(() => parsePayloadPath(bad), TegamiError);
  }
});

Deno.test("valueAt() follows members and array indexes, and answers undefined elsewhere", () => {
  const value = { a: { b: [10, { c: null }] }, "0": "zero" };
  assert.equal(valueAt(value, ["a", "b", "0"]), 10);
  assert.equal(valueAt(value, ["a", "b", "1", "c"]), null);
  assert.equal(valueAt(value, ["0"]), "zero");
  assert.equal(valueAt(value, ["a", "b", "01"]), undefined);
  assert.equal(valueAt(value, ["a", "b", "2"]), undefined);
  assert.equal(valueAt(value, ["a", "x"]), undefined);
  assert.equal(valueAt(value, ["a", "b", "0", "c"]), undefined);
  assert.equal(valueAt(value, ["toString"]), undefined);
});

Deno.test("jsonEqual() compares members in any order and arrays in order", () => {
  assert.ok(jsonEqual({ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }));
  assert.ok(!jsonEqual([1, 2], [2, 1]));
  assert.ok(!jsonEqual({ a: 1 }, { a: 1, b: 2 }));
  assert.ok(!jsonEqual("1", 1));
  assert.ok(!jsonEqual(null, {}));
  assert.ok(!jsonEqual([], {}));
});

Deno.test("jobMatches() takes a job only when every condition holds", () => {
  const match = (filter: unknown) => jobMatches(parseJobFilter("q", filter), ROW);
  assert.ok(match(undefined));
  assert.ok(match({ states: ["dead", "done"] }));
  assert.ok(!match({ states: ["pending"] }));
  assert.ok(match({ created_from: 1000, created_to: 1001 }));
  assert.ok(!match({ created_to: 1000 }));
  assert.ok(match({ finished_from: 5000 }));
  assert.ok(!match({ finished_to: 5000 }));
  assert.ok(match({ error_contains: "billing" }));
  assert.ok(!match({ error_contains: "Billing" }));
  assert.ok(match({ group: "tenant-7" }));
  assert.ok(!match({ group: "tenant" }));
  assert.ok(match({ key_prefix: "order:" }));
  assert.ok(!match({ key_prefix: "order:43" }));
  assert.ok(match({ payload: { path: "tenant.id", equals: "acme" } }));
  assert.ok(match({ payload: { path: "tenant.tags", equals: ["a", "b"] } }));
  assert.ok(match({ payload: { path: "n", equals: 1 } }));
  assert.ok(!match({ payload: { path: "tenant.id", equals: "globex" } }));
  assert.ok(!match({ payload: { path: "tenant.missing", equals: null } }));
  assert.ok(!match({ states: ["dead"], group: "other" }));
});

Deno.test("jobMatches() never takes an unfinished job by its finish time", () => {
  const filter = parseJobFilter("q", { finished_from: 0 });
  assert.ok(!jobMatches(filter, { ...ROW, state: "pending", finished_at: null }));
  assert.ok(
    !jobMatches(parseJobFilter("q", { error_contains: "x" }), { ...ROW, last_error: null }),
  );
  assert.ok(!jobMatches(parseJobFilter("q", { key_prefix: "x" }), { ...ROW, key: null }));
});

Deno.test("readsPayload() says when a store must read payloads, and jobMatches() needs it then", () => {
  const byPath = parseJobFilter("q", { payload: { path: "tenant.id", equals: "acme" } });
  assert.equal(readsPayload(byPath), true);
  assert.equal(readsPayload(parseJobFilter("q", { group: "tenant-7", states: ["dead"] })), false);
  assert.ok(jobMatches(parseJobFilter("q", { group: "tenant-7" }), { ...ROW, payload: null }));
  assert.ok(!jobMatches(byPath, { ...ROW, payload: null }));
});

Deno.test("parseJobFilter() refuses what it cannot use, naming the field", () => {
  refused([], "filter");
  refused({ tenant: "acme" }, "filter.tenant");
  refused({ states: [] }, "filter.states");
  refused({ states: ["finished"] }, "filter.states[0]");
  refused({ created_from: -1 }, "filter.created_from");
  refused({ finished_to: "yesterday" }, "filter.finished_to");
  refused({ created_from: 10, created_to: 10 }, "filter.created_to");
  refused({ error_contains: "" }, "filter.error_contains");
  refused({ group: 7 }, "filter.group");
  refused({ key_prefix: "k".repeat(513) }, "filter.key_prefix");
  refused({ payload: { path: "a" } }, "filter.payload.equals");
  refused({ payload: { path: "a..b", equals: 1 } }, "filter.payload.path");
  refused({ payload: { path: "a", equals: 1, op: "gt" } }, "filter.payload.op");
});

Deno.test("parseJobFilter() orders states and filterView() shows the path joined", () => {
  const filter = parseJobFilter("q", {
    states: ["dead", "pending"],
    payload: { path: "tenant.id", equals: "acme" },
  });
  assert.deepEqual(filter.states, ["pending", "dead"]);
  const { queue: _queue, ...every } = everyJob("q");
  assert.deepEqual(filterView(filter), {
    ...every,
    states: ["pending", "dead"],
    payload: { path: "tenant.id", equals: "acme" },
  });
});
