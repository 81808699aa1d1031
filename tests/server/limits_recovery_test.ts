/**
 * Groups and queue limits survive a crash: their state is counted from the stored jobs and the
 * stored bucket, never kept only in memory, so a SIGKILLed and restarted server goes on holding
 * them against leases taken before the kill.
 */

import assert from "node:assert/strict";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../helpers/pg.ts";
import { spawnServer } from "../helpers/process_server.ts";
import { send } from "../helpers/test_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";

const pg = await pgTestDatabase();

interface Leased {
  id: number;
  group: string | null;
  lease: { token: string };
}

async function leaseAll(url: string): Promise<Leased[]> {
  const answer = await send(url, "POST", "/v1/queues/q/leases", { max: 10, lease_ms: 600_000 });
  assert.equal(answer.status, 200);
  return answer.body.jobs;
}

async function holdsLimitsAcrossKill(store: string[]): Promise<void> {
  let before: Leased[];
  {
    await using server = await spawnServer(store);
    const put = await send(server.url, "PUT", "/v1/queues/q/settings", { concurrency: 3 });
    assert.equal(put.status, 200);
    const jobs = [];
    for (const group of ["a", "a", "a", "b", "b", null, null]) jobs.push({ payload: 1, group });
    const enqueued = await send(server.url, "POST", "/v1/queues/q/jobs", { jobs });
    assert.equal(enqueued.status, 201);
    before = await leaseAll(server.url);
    assert.equal(before.length, 3);
    assert.deepEqual(before.map((d) => d.group).sort(), [null, "a", "b"].sort());
    server.kill("SIGKILL");
    await server.exited();
  }
  await using server = await spawnServer(store);
  // The three leases taken before the kill still hold the queue's three slots.
  assert.deepEqual(await leaseAll(server.url), []);
  const a = before.find((d) => d.group === "a")!;
  const b = before.find((d) => d.group === "b")!;
  // Freeing b's lease frees a slot; a is still leased, so only b's or an ungrouped job can go.
  const ack = await send(server.url, "POST", `/v1/jobs/${b.id}/ack`, { token: b.lease.token });
  assert.equal(ack.status, 200);
  const after = await leaseAll(server.url);
  assert.equal(after.length, 1);
  assert.notEqual(after[0].group, "a", "group a's first job is still leased");
  const stillA = await send(server.url, "POST", `/v1/jobs/${a.id}/ack`, { token: a.lease.token });
  assert.equal(stillA.status, 200);
  server.kill("SIGTERM");
  await server.exited();
}

Deno.test("a SIGKILLed server holds groups and concurrency against leases taken before the kill", async () => {
  await using tmp = await tempDir("tegami-limits-kill-");
  await holdsLimitsAcrossKill(["--db", `${tmp.path}/tegami.db`]);
});

Deno.test({
  name: "a SIGKILLed server on PostgreSQL holds groups and concurrency against earlier leases",
  ignore: pg === null,
  fn: async () => {
    const schema = pg!.schema();
    try {
      await holdsLimitsAcrossKill(["--db", pg!.url, "--pg-schema", schema, "--pg-pool", "4"]);
    } finally {
      await pg!.dropSchema(schema);
    }
  },
});

dropPgTestDatabaseAfterwards(pg);
