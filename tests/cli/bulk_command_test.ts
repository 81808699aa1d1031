import assert from "node:assert/strict";
import { runCli as tegami } from "../helpers/process_server.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";

/** Enqueues `payloads` to "q", leases them all and nacks each dead with `error`. */
async function deadJobs(server: TestServer, payloads: unknown[], error: string): Promise<number[]> {
  const jobs = payloads.map((payload) => ({ payload }));
  await server.request("POST", "/v1/queues/q/jobs", { jobs });
  const leased = await server.request("POST", "/v1/queues/q/leases", { max: jobs.length });
  for (const job of leased.body.jobs) {
    await server.request("POST", `/v1/jobs/${job.id}/nack`, {
      token: job.lease.token,
      error,
      dead: true,
    });
  }
  return leased.body.jobs.map((j: { id: number }) => j.id);
}

Deno.test("tegami bulk counts only without --run, then acts with it", async () => {
  await using server = await startTestServer({ realTime: true });
  const timeouts = await deadJobs(server, [1, 2], "timeout calling billing");
  await deadJobs(server, [3], "bad input");

  const dry = await tegami(["bulk", "requeue", "q", "--error", "timeout", "--url", server.url]);
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(dry.stdout, /^would requeue 2 jobs of queue q \(3 examined\); nothing changed/);
  const job = await server.request("GET", `/v1/jobs/${timeouts[0]}`);
  assert.equal(job.body.state, "dead");

  const run = await tegami([
    "bulk",
    "requeue",
    "q",
    "--error",
    "timeout",
    "--finished-since",
    "1h",
    "--run",
    "--url",
    server.url,
  ]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /^bulk 2: requeue on q: done\n/);
  assert.match(run.stdout, /counts {5}3 examined, 2 matched, 2 done, 0 skipped/);
  for (const id of timeouts) {
    assert.equal((await server.request("GET", `/v1/jobs/${id}`)).body.state, "pending");
  }

  const list = await tegami(["bulk", "list", "--url", server.url]);
  assert.equal(list.code, 0);
  const lines = list.stdout.trim().split("\n");
  const cells = lines.map((line) => line.trim().split(/ {2,}/));
  assert.deepEqual(cells[0], [
    "ID",
    "QUEUE",
    "ACTION",
    "STATE",
    "MATCHED",
    "DONE",
    "BY",
    "STARTED",
  ]);
  assert.deepEqual(cells[1].slice(0, 7), ["2", "q", "requeue", "done", "2", "2", "anonymous"]);
  assert.deepEqual(cells[2].slice(0, 7), [
    "1",
    "q",
    "requeue (dry run)",
    "done",
    "2",
    "0",
    "anonymous",
  ]);
  assert.ok(!Number.isNaN(Date.parse(cells[1][7])), cells[1][7]);

  const show = await tegami(["bulk", "show", "1", "--json", "--url", server.url]);
  const task = JSON.parse(show.stdout);
  assert.deepEqual([task.dry_run, task.matched, task.filter.error_contains], [true, 2, "timeout"]);
});

Deno.test("tegami bulk cancel --payload reads the value as JSON when it is JSON", async () => {
  await using server = await startTestServer({ realTime: true });
  const jobs = [{ payload: { tenant: { id: "acme" }, n: 7 } }, { payload: { n: "7" } }];
  const ids = (await server.request("POST", "/v1/queues/q/jobs", { jobs })).body.jobs;
  const run = await tegami([
    "bulk",
    "cancel",
    "q",
    "--payload",
    "n=7",
    "--run",
    "--url",
    server.url,
  ]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal((await server.request("GET", `/v1/jobs/${ids[0].id}`)).body.state, "cancelled");
  assert.equal((await server.request("GET", `/v1/jobs/${ids[1].id}`)).body.state, "pending");
});

Deno.test("tegami bulk refuses a bad action or flag with exit 2, and a refusal with 1", async () => {
  await using server = await startTestServer({ realTime: true });
  const purge = await tegami(["bulk", "purge", "q", "--url", server.url]);
  assert.equal(purge.code, 2);
  assert.match(purge.stderr, /^tegami bulk: expected requeue, cancel, delete, replay/);
  const payload = await tegami(["bulk", "cancel", "q", "--payload", "acme", "--url", server.url]);
  assert.equal(payload.code, 2);
  assert.match(payload.stderr, /--payload expects PATH=VALUE/);
  const states = await tegami(["bulk", "requeue", "q", "--state", "done", "--url", server.url]);
  assert.equal(states.code, 1);
  assert.match(states.stderr, /validation_failed: Invalid "filter\.states"/);
});

Deno.test("tegami bulk --help teaches the dry run, the filter flags and the actions", async () => {
  const help = await tegami(["bulk", "--help"]);
  assert.equal(help.code, 0);
  for (const text of ["Without --run it only counts", "--finished-since 1h", "replay", "stop ID"]) {
    assert.ok(help.stdout.includes(text), text);
  }
});
