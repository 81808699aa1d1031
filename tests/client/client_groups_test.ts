/**
 * The client's group calls (fair shares): `group()`, `groups()`, `putGroupSettings()` and
 * `resetGroup()`, and the held groups `stats()` answers, against a real server.
 */

import assert from "node:assert/strict";
import { TegamiClient, TegamiError } from "../../lib/client/mod.ts";
import { startTestServer } from "../helpers/test_server.ts";

Deno.test("TegamiClient sets, reads, lists and resets a group's settings", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  const name = "tenant/eu 7 ü";
  const fresh = await client.group("q", name);
  assert.deepEqual(fresh, {
    group: name,
    settings: { weight: 1, concurrency: null, rate: null },
    configured: false,
    pending: 0,
    leased: 0,
    limit: 1,
    held: null,
    held_until: null,
  });
  const put = await client.putGroupSettings("q", name, { weight: 3, rate: "100/1000ms" });
  assert.deepEqual(put.settings, { weight: 3, concurrency: null, rate: "100/1s" });
  assert.equal(put.configured, true);
  await client.putGroupSettings("q", "a", { concurrency: 2 });
  const first = await client.groups("q", { limit: 1 });
  assert.deepEqual(first.groups.map((g) => g.group), ["a"]);
  assert.equal(first.next_after, "a");
  const rest = await client.groups("q", { after: first.next_after! });
  assert.deepEqual(rest.groups.map((g) => g.group), [name]);
  assert.equal(rest.next_after, null);
  assert.equal((await client.resetGroup("q", name)).configured, false);
  assert.deepEqual((await client.groups("q")).groups.map((g) => g.group), ["a"]);
});

Deno.test("TegamiClient's stats() name the group that holds jobs back", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  await client.enqueueBatch("q", [
    { payload: 1, group: "busy" },
    { payload: 2, group: "busy" },
  ]);
  const response = await fetch(`${server.url}/v1/queues/q/leases`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ max: 10 }),
  });
  assert.equal((await response.json()).jobs.length, 1);
  const stats = await client.stats("q");
  assert.deepEqual(stats.groups.top_held, [
    { group: "busy", held: "concurrency", pending: 1, leased: 1, limit: 1 },
  ]);
  assert.equal((await client.group("q", "busy")).held, "concurrency");
});

Deno.test("TegamiClient refuses a group named . or .., which no path can carry", async () => {
  const client = new TegamiClient({ url: "http://127.0.0.1:9" });
  const refused = (error: unknown) =>
    error instanceof TegamiError && error.code === "validation_failed";
  for (const name of [".", ".."]) {
    await assert.rejects(client.group("q", name), refused);
    await assert.rejects(client.putGroupSettings("q", name, { weight: 2 }), refused);
    await assert.rejects(client.resetGroup("q", name), refused);
  }
});
