/**
 * `tegami enqueue` with a key window and a duplicate mode: `--key-ttl` and `--on-duplicate` for
 * one job, `key_ttl_ms` and `on_duplicate` per line with `--jobs`.
 */

import assert from "node:assert/strict";
import { TegamiClient } from "../../lib/client/mod.ts";
import { runCli as tegami } from "../helpers/process_server.ts";
import { startTestServer } from "../helpers/test_server.ts";

Deno.test("tegami enqueue --key-ttl and --on-duplicate replace a waiting job", async () => {
  await using server = await startTestServer();
  const url = ["--url", server.url];
  const first = await tegami([
    "enqueue",
    ...url,
    "--key",
    "k",
    "--key-ttl",
    "10m",
    "--delay",
    "1m",
    "q",
    '"v1"',
  ]);
  assert.equal(first.code, 0, first.stderr);
  const { id } = JSON.parse(first.stdout);
  const client = new TegamiClient({ url: server.url });
  assert.equal((await client.get(id)).key_expires_at, server.clock.now() + 600_000);
  const second = await tegami([
    "enqueue",
    ...url,
    "--key",
    "k",
    "--on-duplicate",
    "replace",
    "q",
    '"v2"',
  ]);
  assert.equal(second.code, 0, second.stderr);
  assert.deepEqual(JSON.parse(second.stdout), { id, deduplicated: true, duplicate: "replaced" });
  const job = await client.get(id);
  assert.deepEqual([job.payload, job.state], ["v2", "pending"]);
  const bad = await tegami(["enqueue", ...url, "--key", "k", "--on-duplicate", "merge", "q", "1"]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /"on_duplicate"/);
});

Deno.test("tegami enqueue --jobs takes key_ttl_ms and on_duplicate per line", async () => {
  await using server = await startTestServer();
  const input = [
    JSON.stringify({ payload: 1, key: "a", key_ttl_ms: 5_000, delay_ms: 60_000 }),
    JSON.stringify({ payload: 2, key: "a", on_duplicate: "extend", delay_ms: 120_000 }),
  ].join("\n");
  const result = await tegami(["enqueue", "--url", server.url, "--jobs", "j"], input);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /\(1 new, 1 deduplicated\)/);
  const stats = await new TegamiClient({ url: server.url }).stats("j");
  assert.equal(stats.counts.delayed, 1, "one job, extended");
  const flags = await tegami(
    ["enqueue", "--url", server.url, "--on-duplicate", "replace", "j"],
    "1\n",
  );
  assert.equal(flags.code, 2, "--on-duplicate applies to one job");
  assert.match(flags.stderr, /--on-duplicate/);
});
