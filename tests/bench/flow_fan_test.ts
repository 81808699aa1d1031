/**
 * WF (bench/workloads/flow_fan.ts) against a real server process, as `deno task bench` runs it:
 * the flow is created whole, every node runs once, the fan-in node last.
 */

import assert from "node:assert/strict";
import { TegamiTarget } from "../../bench/peers/tegami.ts";
import { fanFlowBody, flowFan } from "../../bench/workloads/flow_fan.ts";

Deno.test("fanFlowBody() makes a root, its children and a fan-in node on every child", () => {
  const body = JSON.parse(fanFlowBody("wf", 3));
  assert.deepEqual(
    body.nodes.map((n: { ref: string; depends_on?: string[] }) => [n.ref, n.depends_on ?? []]),
    [
      ["root", []],
      ["c0", ["root"]],
      ["c1", ["root"]],
      ["c2", ["root"]],
      ["all", ["c0", "c1", "c2"]],
    ],
  );
  for (const node of body.nodes) assert.equal(JSON.stringify(node.payload).length, 100);
});

Deno.test("flowFan() runs every node of the flow once, the fan-in node after every child", async () => {
  const target = await TegamiTarget.start();
  try {
    const m = await flowFan(target, { queue: "wf", children: 300 });
    assert.equal(m.jobs, 302);
    assert.equal(m.latency?.count, 300);
    assert.ok(m.latency.p50 >= 0 && m.latency.p99 >= m.latency.p50, JSON.stringify(m.latency));
    assert.ok(Number(m.extra?.fan_in_ms) >= 0, m.notes.join("; "));
    assert.ok(Number(m.extra?.create_ms) > 0, m.notes.join("; "));
    assert.ok(m.cpu !== undefined && Number.isFinite(m.cpu.server));
    assert.ok(!m.notes.some((note) => /redeliveries/.test(note)), m.notes.join("; "));
    const response = await fetch(`${target.url}/v1/queues/wf`);
    const { counts } = await response.json();
    assert.equal(counts.done, 302);
    assert.equal(counts.pending + counts.leased + counts.delayed + counts.blocked, 0);
  } finally {
    await target.stop();
  }
});
