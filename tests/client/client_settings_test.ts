/**
 * The client's queue settings: `settings()`, `putSettings()` (a whole replacement) and
 * `updateSettings()` (change some, keep the rest), against a real server.
 */

import assert from "node:assert/strict";
import { TegamiClient, TegamiError } from "../../lib/client/mod.ts";
import { startTestServer } from "../helpers/test_server.ts";

const DEFAULTS = {
  concurrency: null,
  rate: null,
  group_limit: 1,
  max_attempts: null,
  lease_ms: null,
  backoff: null,
  retain_done_ms: null,
  retain_dead_ms: null,
};

Deno.test("TegamiClient.settings() answers the defaults of a queue nobody configured", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  assert.deepEqual(await client.settings("q"), DEFAULTS);
});

Deno.test("TegamiClient.putSettings() replaces the settings, which stats() then shows", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  const stored = await client.putSettings("q", { concurrency: 2, rate: "60/1m" });
  assert.deepEqual(stored, { ...DEFAULTS, concurrency: 2, rate: "60/1m" });
  assert.deepEqual(await client.putSettings("q", { max_attempts: 3 }), {
    ...DEFAULTS,
    max_attempts: 3,
  });
  assert.deepEqual((await client.stats("q")).settings, { ...DEFAULTS, max_attempts: 3 });
  assert.deepEqual((await client.queues()).map((q) => q.name), ["q"]);
});

Deno.test("TegamiClient.updateSettings() changes the settings given and keeps the others", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  await client.putSettings("q", { concurrency: 2, retain_dead_ms: 60_000 });
  const updated = await client.updateSettings("q", { concurrency: null, rate: "5/s" });
  assert.deepEqual(updated, { ...DEFAULTS, rate: "5/1s", retain_dead_ms: 60_000 });
});

Deno.test("TegamiClient.putSettings() rejects bad settings with validation_failed", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  await assert.rejects(client.putSettings("q", { rate: "fast" }), (error: unknown) => {
    assert.ok(error instanceof TegamiError);
    assert.equal(error.code, "validation_failed");
    assert.match(error.message, /"rate"/);
    return true;
  });
});
