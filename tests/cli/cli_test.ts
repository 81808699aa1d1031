import assert from "node:assert/strict";
import { TegamiClient } from "../../lib/client/mod.ts";
import { programCommand, runCli as tegami, runProgram } from "../helpers/process_server.ts";
import { startTestServer } from "../helpers/test_server.ts";

Deno.test("tegami enqueue adds one job from its JSON argument", async () => {
  await using server = await startTestServer();
  const result = await tegami(["enqueue", "--url", server.url, "--priority", "4", "q", '{"a":1}']);
  assert.equal(result.code, 0, result.stderr);
  const { id } = JSON.parse(result.stdout);
  const job = await new TegamiClient({ url: server.url }).get(id);
  assert.deepEqual(job.payload, { a: 1 });
  assert.equal(job.priority, 4);
});

Deno.test("tegami enqueue imports 10 000 NDJSON lines in batches with a summary", async () => {
  await using server = await startTestServer();
  const lines = Array.from({ length: 10_000 }, (_, i) => JSON.stringify({ n: i })).join("\n");
  const result = await tegami(["enqueue", "bulk"], lines + "\n", { TEGAMI_URL: server.url });
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /enqueued 10000 jobs to bulk \(10000 new, 0 deduplicated\)/);
  const stats = await new TegamiClient({ url: server.url }).stats("bulk");
  assert.equal(stats.counts.pending, 10_000);
});

Deno.test("tegami enqueue --jobs reads job objects and stops at a bad line, naming it", async () => {
  await using server = await startTestServer();
  const input = [
    JSON.stringify({ payload: 1, key: "a" }),
    JSON.stringify({ payload: 2, key: "a" }),
    "not json",
    JSON.stringify({ payload: 3 }),
  ].join("\n");
  const result = await tegami(
    ["enqueue", "--url", server.url, "--jobs", "--batch-size", "2", "j"],
    input,
  );
  assert.equal(result.code, 1);
  assert.match(result.stdout, /enqueued 2 jobs to j \(1 new, 1 deduplicated\)/);
  assert.match(result.stdout, /Line 3: not valid JSON/);
});

Deno.test("tegami enqueue with nothing on stdin says so and exits 1", async () => {
  await using server = await startTestServer();
  // What `cat missing.ndjson | tegami enqueue empty` hands it.
  const result = await tegami(["enqueue", "empty"], "", { TEGAMI_URL: server.url });
  assert.equal(result.code, 1, result.stdout);
  assert.match(result.stdout, /enqueued 0 jobs to empty .*; stopped: the input was empty/);
  assert.match(result.stderr, /^tegami enqueue: read no jobs from stdin; pipe NDJSON/);
});

Deno.test("tegami stats, job and dead show and requeue what the server holds", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  const { id } = await client.enqueue("s", { x: 1 }, { maxAttempts: 1 });
  const leased = await server.request("POST", "/v1/queues/s/leases", {});
  await server.request("POST", `/v1/jobs/${id}/nack`, {
    token: leased.body.jobs[0].lease.token,
    error: "boom",
  });
  const env = { TEGAMI_URL: server.url };
  const stats = await tegami(["stats"], "", env);
  assert.equal(stats.code, 0, stats.stderr);
  assert.match(stats.stdout, /^queue\s+blocked\s+pending\s+delayed\s+leased\s+done\s+dead/);
  assert.match(stats.stdout, /\ns\s+0\s+0\s+0\s+0\s+0\s+1\s+0/);
  const json = await tegami(["stats", "--json", "s"], "", env);
  assert.equal(JSON.parse(json.stdout).counts.dead, 1);
  const job = await tegami(["job", String(id)], "", env);
  assert.equal(JSON.parse(job.stdout).last_error, "boom");
  const list = await tegami(["dead", "list", "--json", "s"], "", env);
  assert.equal(JSON.parse(list.stdout.trim()).id, id);
  const requeue = await tegami(["dead", "requeue", "s"], "", env);
  assert.match(requeue.stdout, /requeued 1 jobs/);
  assert.equal((await client.get(id)).state, "pending");
  const missing = await tegami(["job", "999"], "", env);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /not_found/);
});

Deno.test("tegami dead list prints a table, NDJSON with --json, and says when it is empty", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  const { id } = await client.enqueue("d", { x: 1 }, { maxAttempts: 1 });
  const leased = await server.request("POST", "/v1/queues/d/leases", {});
  await server.request("POST", `/v1/jobs/${id}/nack`, {
    token: leased.body.jobs[0].lease.token,
    error: "smtp said no\nsecond line",
  });
  const env = { TEGAMI_URL: server.url };
  const table = await tegami(["dead", "list", "d"], "", env);
  assert.equal(table.code, 0, table.stderr);
  const [header, row, ...more] = table.stdout.trimEnd().split("\n");
  assert.match(header, /^id\s+attempts\s+died\s+last_error$/);
  assert.match(row, new RegExp(`^\\s*${id}\\s+1/1\\s+\\d{4}-\\d\\d-\\d\\dT\\S+Z\\s+smtp said no$`));
  assert.deepEqual(more, []);
  const ndjson = await tegami(["dead", "list", "--json", "d"], "", env);
  assert.equal(JSON.parse(ndjson.stdout).last_error, "smtp said no\nsecond line");

  const empty = await tegami(["dead", "list", "none"], "", env);
  assert.equal(empty.code, 0, empty.stderr);
  assert.match(empty.stdout, /\(no dead jobs in none\)\n$/);
  const emptyJson = await tegami(["dead", "list", "--json", "none"], "", env);
  assert.equal(emptyJson.stdout, "");
  assert.equal(emptyJson.stderr, "no dead jobs in none\n");
});

Deno.test("tegami consume --exec runs a command per job: exit 0 acks, else nacks", async () => {
  await using server = await startTestServer({ realTime: true, config: { backoffBaseMs: 60_000 } });
  const client = new TegamiClient({ url: server.url });
  const good = await client.enqueue("e", { ok: true });
  const bad = await client.enqueue("e", { ok: false });
  const script = `read -r payload; case "$payload" in *true*) ` +
    `echo "{\\"job\\":$TEGAMI_JOB_ID,\\"attempt\\":$TEGAMI_ATTEMPT}";; ` +
    `*) echo "it broke on $TEGAMI_JOB_ID" >&2; exit 3;; esac`;
  const { command, prefix } = programCommand();
  const child = new Deno.Command(command, {
    args: [...prefix, "consume", "--url", server.url, "e", "--exec", script],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const deadline = Date.now() + 10_000;
  while (
    (await client.get(good.id)).state !== "done" || (await client.get(bad.id)).attempts === 0 ||
    (await client.get(bad.id)).state === "leased"
  ) {
    assert.ok(Date.now() < deadline, "the worker handled both jobs in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill("SIGTERM");
  const out = await child.output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  // A failure shows the command's last stderr line on the console, not only in last_error.
  assert.match(stderr, new RegExp(`job ${bad.id} attempt 1: exit 3: it broke on ${bad.id}\n`));
  assert.deepEqual((await client.get(good.id)).result, { job: good.id, attempt: 1 });
  const failed = await client.get(bad.id);
  assert.equal(failed.state, "delayed");
  assert.equal(failed.last_error, `it broke on ${bad.id}`);
});

Deno.test("tegami consume --exec exits 2 before taking a job when the command cannot run", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  const { id } = await client.enqueue("x", { to: "ada@example.com" });
  const result = await tegami(
    ["consume", "x", "--exec", "./no-such-send-mail.sh"],
    "",
    { TEGAMI_URL: server.url },
  );
  assert.equal(result.code, 2, result.stderr);
  assert.equal(
    result.stderr,
    "tegami consume: Cannot run --exec: ./no-such-send-mail.sh: no such file\n",
  );
  const job = await client.get(id);
  assert.equal(job.state, "pending");
  assert.equal(job.attempts, 0);
});

Deno.test("client commands exit 2 on a usage mistake", async () => {
  const result = await runProgram(["dead", "sideways", "q"]);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /expected list or requeue/);
  const noExec = await runProgram(["consume", "q"]);
  assert.equal(noExec.code, 2);
  assert.match(noExec.stderr, /--exec/);
  const badDelay = await runProgram(["enqueue", "q", "{}", "--delay", "5x"]);
  assert.equal(badDelay.code, 2, badDelay.stderr);
  assert.match(badDelay.stderr, /^tegami enqueue: Invalid --delay: Cannot parse duration "5x"/);
  const badLease = await runProgram([
    "schedule",
    "put",
    "s",
    "--queue",
    "q",
    "--cron",
    "* * * * *",
    "--lease",
    "zz",
  ]);
  assert.equal(badLease.code, 2, badLease.stderr);
  assert.match(badLease.stderr, /^tegami schedule: Invalid --lease: Cannot parse duration "zz"/);
});
