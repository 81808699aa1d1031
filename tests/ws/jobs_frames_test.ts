/**
 * How `jobsFrames` (ws/protocol.ts) splits a push into v2 `jobs` frames: as many jobs in each as
 * keep its UTF-8 size within the bound, exactly where counting every byte puts the split, with
 * ASCII and multi-byte payloads alike, and a job larger than the bound alone in its frame.
 */

import assert from "node:assert/strict";
import type { Delivery, Job } from "../../lib/core/job.ts";
import { jobsFrames } from "../../lib/ws/protocol.ts";
import { deliveryJson } from "../../lib/core/job.ts";

const utf8 = (text: string) => new TextEncoder().encode(text).length;

function delivery(id: number, payload: string): Delivery {
  const job = {
    id,
    queue: "q",
    state: "leased",
    payload: JSON.stringify(payload),
    attributes: null,
    priority: 0,
    key: null,
    key_expires_at: null,
    group: null,
    attempts: 1,
    max_attempts: 5,
    run_at: 0,
    lease_ms: null,
    backoff: null,
    created_at: 0,
    checkpoint: null,
    progress: null,
    progress_at: null,
    result: null,
    last_error: null,
    lease_expires_at: 1000,
    finished_at: null,
    dead_lettered_from: null,
  } as unknown as Job;
  return { job, lease: { token: `t${id}`, expires_at: 1000 } };
}

/** The split counting every byte: each frame takes jobs while the next one still fits. */
function expectedCounts(deliveries: Delivery[], maxBytes: number): number[] {
  const head = utf8(`{"op":"jobs","queue":"q","jobs":[`) + 2;
  const counts: number[] = [];
  let bytes = head;
  let count = 0;
  for (const d of deliveries) {
    const size = utf8(deliveryJson(d));
    if (count > 0 && bytes + 1 + size > maxBytes) {
      counts.push(count);
      bytes = head;
      count = 0;
    }
    bytes += size + (count > 0 ? 1 : 0);
    count++;
  }
  if (count > 0) counts.push(count);
  return counts;
}

Deno.test("jobsFrames() splits where exact UTF-8 sizes put the split, whatever the payloads", () => {
  const payloads = ["a", "é".repeat(40), "x".repeat(120), "😀".repeat(30), "ü", "b".repeat(300)];
  const deliveries = Array.from(
    { length: 60 },
    (_, i) => delivery(i + 1, payloads[(i * 7) % payloads.length]),
  );
  for (const maxBytes of [300, 700, 1000, 1500, 2500, 10_000, 1 << 20]) {
    const frames = [...jobsFrames("q", deliveries, maxBytes)];
    assert.deepEqual(
      frames.map((f) => f.count),
      expectedCounts(deliveries, maxBytes),
      `${maxBytes}`,
    );
    let at = 0;
    for (const { frame, count } of frames) {
      const parsed = JSON.parse(frame);
      assert.deepEqual(
        parsed.jobs.map((j: { id: number }) => j.id),
        deliveries.slice(at, at + count).map((d) => d.job.id),
      );
      if (count > 1) assert.ok(utf8(frame) <= maxBytes, `${utf8(frame)} bytes over ${maxBytes}`);
      at += count;
    }
    assert.equal(at, deliveries.length);
  }
});

Deno.test("jobsFrames() puts a job larger than the bound alone in its frame", () => {
  const deliveries = [delivery(1, "a"), delivery(2, "é".repeat(500)), delivery(3, "b")];
  const frames = [...jobsFrames("q", deliveries, 600)];
  assert.deepEqual(frames.map((f) => f.count), [1, 1, 1]);
});
