/**
 * The trace context rules every door applies, each case from W3C Trace Context (§3.2
 * traceparent, §3.3 tracestate) or AWS X-Ray's trace header format.
 */

import assert from "node:assert/strict";
import type { Attribute } from "../../lib/core/attributes.ts";
import {
  addTraceHeaders,
  parseTraceparent,
  traceparentFromXRay,
  traceparentProblem,
  tracestateProblem,
  xrayFromTraceparent,
} from "../../lib/core/trace_context.ts";

const VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

Deno.test("parseTraceparent() reads the four fields of version 00 (§3.2.2)", () => {
  assert.deepEqual(parseTraceparent(VALID), {
    version: "00",
    traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
    parentId: "00f067aa0ba902b7",
    flags: "01",
  });
});

Deno.test("traceparentProblem() refuses what §3.2 forbids", () => {
  const bad: [string, RegExp][] = [
    ["", /version-traceid-parentid-flags/],
    [VALID.toUpperCase(), /lowercase hex/],
    [VALID + "-extra", /lowercase hex/], // version 00 is exactly 55 characters (§3.2.4)
    [VALID.slice(0, -1), /lowercase hex/],
    ["00-00000000000000000000000000000000-00f067aa0ba902b7-01", /trace id must not be all zeros/],
    ["00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", /parent id must not be all zeros/],
    ["ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", /version ff/],
    ["00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", /lowercase hex/],
    [`${VALID}, ${VALID}`, /lowercase hex/], // two headers, combined
  ];
  for (const [value, problem] of bad) assert.match(traceparentProblem(value) ?? "", problem, value);
  assert.equal(traceparentProblem(VALID), null);
});

Deno.test("traceparentProblem() reads a later version's known fields and keeps the rest (§3.2.4)", () => {
  const later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next";
  assert.equal(traceparentProblem(later), null);
  assert.equal(parseTraceparent(later)?.version, "01");
  assert.notEqual(traceparentProblem(later.replace("-what", "what")), null);
});

Deno.test("tracestateProblem() takes up to 32 key=value members and refuses the rest (§3.3.1)", () => {
  assert.equal(tracestateProblem("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"), null);
  assert.equal(tracestateProblem(" rojo=1 ,\t, tenant@vendor=x "), null);
  assert.equal(tracestateProblem(""), null);
  const many = Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(",");
  assert.match(tracestateProblem(many) ?? "", /at most 32 members, not 33/);
  assert.match(tracestateProblem("Rojo=1") ?? "", /key=value/);
  assert.match(tracestateProblem("rojo=a=b") ?? "", /key=value/);
  assert.match(tracestateProblem("rojo=") ?? "", /key=value/);
  assert.match(tracestateProblem("rojo=1,rojo=2") ?? "", /"rojo" appears twice/);
});

Deno.test("addTraceHeaders() adds both headers unless the job carries a traceparent", () => {
  const empty = new Map<string, Attribute>();
  assert.equal(addTraceHeaders(empty, VALID, "rojo=1, congo=2"), null);
  assert.deepEqual([...empty], [
    ["traceparent", { type: "String", value: VALID }],
    ["tracestate", { type: "String", value: "rojo=1,congo=2" }],
  ]);
  const own = "00-11111111111111111111111111111111-2222222222222222-00";
  const carried = new Map([["traceparent", { type: "String", value: own }]]);
  assert.equal(addTraceHeaders(carried, VALID, "rojo=1"), null);
  assert.deepEqual([...carried], [["traceparent", { type: "String", value: own }]]);
});

Deno.test("addTraceHeaders() names the header it cannot take", () => {
  const none = new Map<string, Attribute>();
  assert.deepEqual(addTraceHeaders(none, null, "rojo=1"), {
    field: "tracestate",
    problem: "needs a traceparent header beside it",
  });
  assert.equal(addTraceHeaders(none, "00-x", null)?.field, "traceparent");
  assert.equal(addTraceHeaders(none, VALID, "Bad")?.field, "tracestate");
  const ten = new Map<string, Attribute>(
    Array.from({ length: 10 }, (_, i) => [`a${i}`, { type: "String", value: "x" }]),
  );
  assert.match(addTraceHeaders(ten, VALID, null)?.problem ?? "", /no room/);
  assert.equal(ten.size, 10);
  assert.equal(addTraceHeaders(none, null, null), null);
  assert.equal(none.size, 0);
});

Deno.test("traceparentFromXRay() converts an X-Ray trace header, and xrayFromTraceparent() back", () => {
  const xray = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
  const traceparent = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01";
  assert.equal(traceparentFromXRay(xray), traceparent);
  assert.equal(xrayFromTraceparent(traceparent), xray);
  assert.equal(
    traceparentFromXRay(
      "Sampled=0;Lineage=a87bd80c:1|68fd508a:5;Parent=53995c3f42cd8ad8;Root=1-5759e988-bd862e3fe1be46a994272793",
    ),
    "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-00",
  );
  assert.equal(
    traceparentFromXRay(
      "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=?",
    ),
    "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-00",
  );
  assert.equal(traceparentFromXRay("Root=1-5759e988-bd862e3fe1be46a994272793"), null);
  assert.equal(
    traceparentFromXRay("Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8"),
    null,
  );
  assert.equal(traceparentFromXRay("nonsense"), null);
  assert.equal(xrayFromTraceparent("00-x"), null);
  assert.equal(
    xrayFromTraceparent("00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-02"),
    "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0",
  );
});
