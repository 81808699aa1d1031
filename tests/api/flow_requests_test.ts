/**
 * The flow request parsers of lib/api/flows.ts: a node is read by the one-job enqueue's parser
 * (the same options and errors, located at the node), plus its ref, queue and edges.
 */

import assert from "node:assert/strict";
import { parseAddNodes, parseFlow, pathFlowId } from "../../lib/api/flows.ts";
import { parseJob } from "../../lib/api/requests.ts";
import { TegamiError } from "../../lib/core/errors.ts";

const LIMITS = { maxPayload: 1024, maxBatch: 10 };
const NOW = 1_000_000;

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof TegamiError, String(error));
    return `${error.code}: ${error.message}`;
  }
  throw new Error("not refused");
}

Deno.test("parseFlow() reads each node's job as parseJob() reads a one-job enqueue", () => {
  const job = { payload: { n: 1 }, priority: 5, delay_ms: 10, max_attempts: 2, group: "g" };
  const flow = parseFlow({ key: "k", nodes: [{ ref: "a", queue: "q", ...job }] }, LIMITS, NOW);
  assert.deepEqual(flow, {
    key: "k",
    nodes: [{ ref: "a", queue: "q", job: parseJob(job, LIMITS, NOW), depends_on: [] }],
  });
});

Deno.test("parseFlow() takes an edge as a ref or {ref, on_failure}, cancel by default", () => {
  const flow = parseFlow(
    {
      nodes: [
        { ref: "a", queue: "q", payload: 1 },
        { ref: "b", queue: "q", payload: 1, depends_on: null },
        {
          ref: "c",
          queue: "q",
          payload: 1,
          depends_on: ["a", { ref: "b" }, { ref: "x", on_failure: "run" }, {
            ref: "y",
            on_failure: null,
          }],
        },
      ],
    },
    LIMITS,
    NOW,
  );
  assert.equal(flow.key, null);
  assert.deepEqual(flow.nodes.map((n) => n.depends_on), [[], [], [
    { ref: "a", on_failure: "cancel" },
    { ref: "b", on_failure: "cancel" },
    { ref: "x", on_failure: "run" },
    { ref: "y", on_failure: "cancel" },
  ]]);
});

Deno.test("parseFlow() keeps each payload as the text received", () => {
  const source = '{"nodes":[{"ref":"a","queue":"q","payload":1.0},' +
    '{"payload" : {"big":12345678901234567890}, "ref":"b","queue":"q"}]}';
  const flow = parseFlow(JSON.parse(source), LIMITS, NOW, source);
  assert.deepEqual(flow.nodes.map((n) => n.job.payload), ["1.0", '{"big":12345678901234567890}']);
});

Deno.test("parseFlow() names the node, and the edge, of every error", () => {
  const node = (more: unknown) => ({ nodes: [{ ref: "a", queue: "q", payload: 1 }, more] });
  const cases: [unknown, string][] = [
    [{}, 'validation_failed: Invalid "nodes": is required'],
    [{ nodes: {} }, 'validation_failed: Invalid "nodes": expected an array of nodes'],
    [{ nodes: [], extra: 1 }, 'validation_failed: Invalid "extra": unknown field'],
    [{ key: "", nodes: [] }, 'validation_failed: Invalid "key": expected a non-empty string'],
    [node(7), 'validation_failed: Invalid "nodes[1]": expected a JSON object'],
    [
      node({ ref: "b", queue: "q", payload: 1, key: "k" }),
      `validation_failed: Invalid "nodes[1].key": a flow's jobs carry no key: give the flow one`,
    ],
    [
      node({ ref: "b", queue: "q", payload: 1, key_ttl_ms: 5 }),
      'validation_failed: Invalid "nodes[1].key_ttl_ms": needs a key: it is how long the key blocks duplicates',
    ],
    [
      node({ ref: "b", queue: "q", payload: "x".repeat(2000) }),
      'payload_too_large: Invalid "nodes[1].payload": 2002 bytes of JSON is over the limit of 1024',
    ],
    [
      node({ ref: "b", queue: "q", payload: 1, backoff: { base_ms: 5 } }),
      'validation_failed: Invalid "nodes[1].backoff.max_ms": is required',
    ],
    [
      node({ ref: 3, queue: "q", payload: 1 }),
      'validation_failed: Invalid "nodes[1].ref": expected a ref: a string of 1 to 200 characters',
    ],
    [
      node({ ref: "b\u0000", queue: "q", payload: 1 }),
      'validation_failed: Invalid "nodes[1].ref": expected no NUL (U+0000) characters',
    ],
    [
      node({ ref: "b", queue: "q", payload: 1, depends_on: "a" }),
      'validation_failed: Invalid "nodes[1].depends_on": expected an array of refs or {"ref", "on_failure"} objects',
    ],
    [
      node({ ref: "b", queue: "q", payload: 1, depends_on: ["a", { ref: "a", when: 1 }] }),
      'validation_failed: Invalid "nodes[1].depends_on[1].when": unknown field',
    ],
    [
      node({ ref: "b", queue: "q", payload: 1, depends_on: ["\ud800"] }),
      'validation_failed: Invalid "nodes[1].depends_on[0]": expected well-formed Unicode (it holds a lone surrogate)',
    ],
    [
      node({ ref: "b", queue: "q", payload: 1, depends_on: [{ on_failure: "run" }] }),
      'validation_failed: Invalid "nodes[1].depends_on[0].ref": expected a ref: a string of 1 to 200 characters',
    ],
  ];
  for (const [body, expected] of cases) {
    assert.equal(refusal(() => parseFlow(body, LIMITS, NOW)), expected, JSON.stringify(body));
  }
});

Deno.test("parseFlow() refuses more than 20,000 nodes before reading any", () => {
  const nodes = new Array(20_001).fill(7);
  assert.equal(
    refusal(() => parseFlow({ nodes }, LIMITS, NOW)),
    'validation_failed: Invalid "nodes": at most 20000 nodes per request, got 20001',
  );
});

Deno.test("parseAddNodes() needs the lease token and the nodes", () => {
  const nodes = [{ ref: "a", queue: "q", payload: 1 }];
  assert.equal(parseAddNodes({ token: "t", nodes }, LIMITS, NOW).token, "t");
  assert.equal(
    refusal(() => parseAddNodes({ nodes }, LIMITS, NOW)),
    'validation_failed: Invalid "token": expected the lease token string from the delivery',
  );
  assert.equal(
    refusal(() => parseAddNodes({ token: "t", nodes, key: "k" }, LIMITS, NOW)),
    'validation_failed: Invalid "key": unknown field',
  );
});

Deno.test("pathFlowId() takes 1 to 16 digits naming a positive id", () => {
  assert.equal(pathFlowId("42"), 42);
  for (const bad of ["0", "-1", "1.5", "x", "12345678901234567"]) {
    assert.equal(
      refusal(() => pathFlowId(bad)),
      'validation_failed: Invalid "id": expected a positive integer flow id',
    );
  }
});
