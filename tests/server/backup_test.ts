/**
 * Backups through `POST /v1/backup` on a real server: taken while producers and consumers run at
 * full speed, the copy restores to a server that has every job acknowledged before the backup
 * began; the copy is checked and reported; PostgreSQL answers that `pg_dump` is the tool.
 */

import assert from "node:assert/strict";
import { ManualClock } from "../../lib/core/clock.ts";
import { verifyCopy } from "../../lib/store/sqlite/sqlite_backup.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";

const pg = await pgTestDatabase();

/** Polls `GET /v1/backup` until the backup ends; answers its last status. */
async function backupEnd(server: TestServer) {
  for (;;) {
    const answer = await server.request("GET", "/v1/backup");
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    if (answer.body.state !== "running") return answer.body;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function post(url: string, path: string, body: unknown) {
  const response = await fetch(url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

Deno.test("a backup taken under full load restores every job acknowledged before it began", async () => {
  await using tmp = await tempDir("tegami-backup-");
  const target = `${tmp.path}/copy.db`;
  const enqueued: { id: number; at: number }[] = [];
  const acked: { id: number; at: number }[] = [];
  let running = true;
  {
    await using server = await startTestServer({
      realTime: true,
      config: { backupDir: tmp.path },
    });
    // W1's shape: producers enqueue batches, consumers lease and ack, all as fast as they can.
    const producer = async (p: number) => {
      for (let n = 0; running; n++) {
        const jobs = Array.from({ length: 20 }, (_, i) => ({ payload: { p, n, i } }));
        const answer = await post(server.url, "/v1/queues/w1/jobs", { jobs });
        assert.equal(answer.status, 201);
        const at = performance.now();
        for (const job of answer.body.jobs) enqueued.push({ id: job.id, at });
      }
    };
    const consumer = async () => {
      while (running) {
        const leased = await post(server.url, "/v1/queues/w1/leases", { max: 20, wait_ms: 50 });
        assert.equal(leased.status, 200);
        await Promise.all(
          leased.body.jobs.map(async (job: { id: number; lease: { token: string } }) => {
            const answer = await post(server.url, `/v1/jobs/${job.id}/ack`, {
              token: job.lease.token,
            });
            assert.equal(answer.status, 200);
            acked.push({ id: job.id, at: performance.now() });
          }),
        );
      }
    };
    // A backlog first, so the copy takes long enough for the load to run through it.
    for (let b = 0; b < 40; b++) {
      const jobs = Array.from(
        { length: 1000 },
        (_, i) => ({ payload: { b, i, pad: "x".repeat(200) } }),
      );
      assert.equal((await post(server.url, "/v1/queues/backlog/jobs", { jobs })).status, 201);
    }
    const load = [0, 1, 2].map(producer).concat([0, 1, 2].map(consumer));
    await new Promise((resolve) => setTimeout(resolve, 400));
    const began = performance.now();
    const started = await server.request("POST", "/v1/backup", { path: target });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    assert.equal(started.body.state, "running");
    const end = await backupEnd(server);
    const ended = performance.now();
    // Some load after the end too, so the copy is not simply the last state.
    await new Promise((resolve) => setTimeout(resolve, 200));
    running = false;
    await Promise.all(load);
    assert.equal(end.state, "done", end.error);
    assert.equal(end.path, target);
    assert.ok(end.took_ms >= 0 && end.bytes_written === end.report.bytes);
    const during = enqueued.filter((e) => e.at >= began && e.at < ended).length +
      acked.filter((a) => a.at >= began && a.at < ended).length;
    assert.ok(during > 0, "writes were answered while the backup ran");
    const before = enqueued.filter((e) => e.at < began);
    const ackedBefore = acked.filter((a) => a.at < began);
    assert.ok(before.length > 500, `${before.length} jobs enqueued before the backup`);
    assert.ok(ackedBefore.length > 100, `${ackedBefore.length} jobs acked before the backup`);
    const stored = Object.values(end.report.counts as Record<string, number>)
      .reduce((a, b) => a + b, 0) - 40_000;
    assert.ok(stored >= before.length, `${stored} W1 jobs in the copy, ${before.length} before`);
    assert.ok(stored < enqueued.length, "jobs enqueued after the backup are not in it");
    // Restoring is starting a server on the copy.
    const restoredDir = `${tmp.path}/restored`;
    await Deno.mkdir(restoredDir);
    await Deno.copyFile(target, `${restoredDir}/tegami.db`);
    await using restored = await startTestServer({ dir: restoredDir, realTime: true });
    const broker = restored.server.broker;
    for (const { id } of before) {
      assert.notEqual(await broker.get(id), null, `job ${id}, enqueued before, is in the copy`);
    }
    for (const { id } of ackedBefore) {
      assert.equal((await broker.get(id))?.state, "done", `job ${id}, acked before, is done`);
    }
    // A copy verifies on its own, with the counts the backup reported.
    const report = await verifyCopy(target);
    assert.deepEqual(report.counts, end.report.counts);
  }
});

Deno.test("a job leased at backup time stays leased on the restored server until its lease ends", async () => {
  await using tmp = await tempDir("tegami-backup-");
  const clock = new ManualClock();
  const target = `${tmp.path}/copy.db`;
  let held: { id: number; token: string }[];
  {
    await using server = await startTestServer({ clock, config: { backupDir: tmp.path } });
    await server.request("POST", "/v1/queues/q/jobs", { jobs: [{ payload: 1 }, { payload: 2 }] });
    const leased = await server.request("POST", "/v1/queues/q/leases", {
      max: 2,
      lease_ms: 30_000,
    });
    held = leased.body.jobs.map((job: { id: number; lease: { token: string } }) => ({
      id: job.id,
      token: job.lease.token,
    }));
    assert.equal((await server.request("POST", "/v1/backup", { path: target })).status, 202);
    const end = await backupEnd(server);
    assert.equal(end.report.counts.leased, 2);
    assert.equal(end.report.leased_until, clock.now() + 30_000);
  }
  const dir = `${tmp.path}/restored`;
  await Deno.mkdir(dir);
  await Deno.copyFile(target, `${dir}/tegami.db`);
  await using restored = await startTestServer({ dir, clock });
  clock.advance(10_000);
  // The lease lives in the row: its holder can still ack with its token.
  const ack = await restored.request("POST", `/v1/jobs/${held[0].id}/ack`, {
    token: held[0].token,
  });
  assert.equal(ack.status, 200);
  assert.equal((await restored.request("GET", `/v1/jobs/${held[1].id}`)).body.state, "leased");
  // At its expiry the other job is pending again.
  await restored.advance(20_001);
  assert.equal((await restored.request("GET", `/v1/jobs/${held[1].id}`)).body.state, "pending");
});

Deno.test("POST /v1/backup refuses a second backup while one runs, and bad paths", async () => {
  await using server = await startTestServer();
  assert.equal((await server.request("GET", "/v1/backup")).status, 404);
  // Only files inside the backup directory (by default the database's): not elsewhere, not up
  // and out of it, not through a link that leads out of it.
  await using elsewhere = await tempDir("tegami-backup-elsewhere-");
  await Deno.symlink(elsewhere.path, `${server.dir}/out`);
  for (const path of [`${elsewhere.path}/x.db`, "../x.db", `${server.dir}/../x.db`, "out/x.db"]) {
    const outside = await server.request("POST", "/v1/backup", { path });
    assert.equal(outside.status, 400, path);
    assert.match(outside.body.error.message, /outside the backup directory/, path);
  }
  await Deno.symlink(`${elsewhere.path}/target.db`, `${server.dir}/link.db`);
  const link = await server.request("POST", "/v1/backup", { path: "link.db" });
  assert.equal(link.status, 400);
  assert.match(link.body.error.message, /is a link/);
  assert.deepEqual([...Deno.readDirSync(elsewhere.path)], [], "nothing written outside");
  const own = await server.request("POST", "/v1/backup", { path: server.dbPath });
  assert.equal(own.status, 400);
  assert.match(own.body.error.message, /is the database or one of its files/);
  const missing = await server.request("POST", "/v1/backup", {
    path: `${server.dir}/no/such/dir/copy.db`,
  });
  assert.equal(missing.status, 400);
  assert.match(missing.body.error.message, /does not exist/);
  const extra = await server.request("POST", "/v1/backup", { path: `${server.dir}/a.db`, x: 1 });
  assert.equal(extra.status, 400);
  const first = await server.request("POST", "/v1/backup", { path: `${server.dir}/a.db` });
  assert.equal(first.status, 202);
  const second = await server.request("POST", "/v1/backup", { path: `${server.dir}/b.db` });
  // The first may already be done on a fast machine; either way nothing is overwritten twice.
  if (second.status === 409) assert.match(second.body.error.message, /is running/);
  else assert.equal(second.status, 202);
  assert.equal((await backupEnd(server)).state, "done");
  const names = [...Deno.readDirSync(server.dir)].map((entry) => entry.name);
  assert.deepEqual(names.filter((name) => name.includes(".tmp-")), [], "no temporary file left");
});

Deno.test("POST /v1/backup needs an admin token that is not limited to some queues", async () => {
  await using server = await startTestServer({
    tokens: [
      { name: "admin", token: "backup-admin-token-0123456789", scopes: ["admin"] },
      { name: "ops", token: "backup-ops-token-0123456789ab", scopes: ["admin"], queues: ["a.*"] },
      { name: "worker", token: "backup-work-token-0123456789a", scopes: ["consume"] },
    ],
  });
  const as = (token: string) => ({ authorization: `Bearer ${token}` });
  const path = `${server.dir}/copy.db`;
  const call = (token: string) =>
    server.request("POST", "/v1/backup", { path }, as(token)).then((a) => a.status);
  assert.equal(await call("backup-work-token-0123456789a"), 403);
  assert.equal(await call("backup-ops-token-0123456789ab"), 403);
  assert.equal((await server.request("POST", "/v1/backup", { path })).status, 401);
  assert.equal(await call("backup-admin-token-0123456789"), 202);
});

Deno.test({
  name: "POST /v1/backup on PostgreSQL answers conflict, saying to use pg_dump",
  ignore: pg === null,
  fn: async () => {
    const schema = pg!.schema();
    try {
      await using server = await startTestServer({ config: pgServerConfig(pg!, schema) });
      for (const [method, body] of [["POST", { path: "/tmp/x.db" }], ["GET", undefined]]) {
        const answer = await server.request(method as string, "/v1/backup", body);
        assert.equal(answer.status, 409);
        assert.equal(answer.body.error.code, "conflict");
        assert.match(answer.body.error.message, /PostgreSQL.*pg_dump/);
      }
    } finally {
      await pg!.dropSchema(schema);
    }
  },
});

dropPgTestDatabaseAfterwards(pg);
