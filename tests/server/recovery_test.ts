import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { ManualClock } from "../../lib/core/clock.ts";
import { runProgram, spawnServer } from "../helpers/process_server.ts";
import { send, startTestServer } from "../helpers/test_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { pageSizeOf } from "../helpers/sqlite_file.ts";

Deno.test("a restarted server keeps every job, and a lease taken before the stop still acks", async () => {
  await using tmp = await tempDir("tegami-restart-");
  const dir = tmp.path;
  const clock = new ManualClock();
  let token: string;
  let id: number;
  {
    await using first = await startTestServer({ dir, clock });
    for (let i = 0; i < 5; i++) {
      await first.request("POST", "/v1/queues/q/jobs", { payload: i, key: `k${i}` });
    }
    const leased = await first.request("POST", "/v1/queues/q/leases", { lease_ms: 60_000 });
    [{ id, lease: { token } }] = leased.body.jobs;
  }
  await using second = await startTestServer({ dir, clock });
  await second.advance(10_000); // still inside the lease
  const ack = await second.request("POST", `/v1/jobs/${id}/ack`, { token });
  assert.equal(ack.status, 200);
  const stats = await second.request("GET", "/v1/queues/q");
  assert.deepEqual(stats.body.counts, {
    blocked: 0,
    pending: 4,
    delayed: 0,
    leased: 0,
    done: 1,
    dead: 0,
    cancelled: 0,
  });
  const dup = await second.request("POST", "/v1/queues/q/jobs", { payload: 9, key: "k3" });
  assert.equal(dup.body.deduplicated, true);
});

Deno.test("a lease that expired while the server was down returns to pending at startup", async () => {
  await using tmp = await tempDir("tegami-restart-");
  const dir = tmp.path;
  const clock = new ManualClock();
  let id: number;
  {
    await using first = await startTestServer({ dir, clock });
    await first.request("POST", "/v1/queues/q/jobs", { payload: 1 });
    const leased = await first.request("POST", "/v1/queues/q/leases", { lease_ms: 1000 });
    id = leased.body.jobs[0].id;
  }
  clock.advance(5000);
  await using second = await startTestServer({ dir, clock });
  const job = await second.request("GET", `/v1/jobs/${id}`);
  assert.equal(job.body.state, "pending");
  const again = await second.request("POST", "/v1/queues/q/leases", {});
  assert.equal(again.body.jobs[0].attempt, 2);
});

Deno.test("a long-poll cut short by shutdown answers 200 with no jobs", async () => {
  await using server = await startTestServer();
  const poll = server.request("POST", "/v1/queues/idle/leases", { wait_ms: 30_000 });
  await new Promise((resolve) => setTimeout(resolve, 50));
  await server.stop();
  const answer = await poll;
  assert.equal(answer.status, 200);
  assert.deepEqual(answer.body, { jobs: [] });
});

Deno.test("a SIGKILLed server loses no acknowledged enqueue or ack", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami-kill-" });
  const db = `${dir}/tegami.db`;
  try {
    const acked = new Set<number>();
    const completed = new Set<number>();
    for (let cycle = 0; cycle < 3; cycle++) {
      await using server = await spawnServer(["--db", db]);
      let stop = false;
      const producers = Array.from({ length: 8 }, async (_, p) => {
        for (let i = 0; !stop; i++) {
          try {
            const answer = await send(server.url, "POST", "/v1/queues/k/jobs", {
              payload: { cycle, p, i },
            });
            if (answer.status === 201) acked.add(answer.body.id);
          } catch {
            return; // connection cut by the kill: outcome unknown, not counted
          }
        }
      });
      const consumer = (async () => {
        while (!stop) {
          try {
            const leased = await send(server.url, "POST", "/v1/queues/k/leases", { max: 10 });
            for (const job of leased.body.jobs ?? []) {
              const ack = await send(server.url, "POST", `/v1/jobs/${job.id}/ack`, {
                token: job.lease.token,
              });
              if (ack.status === 200) completed.add(job.id);
            }
          } catch {
            return;
          }
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 150 + Math.random() * 250));
      server.kill("SIGKILL");
      stop = true;
      await Promise.all([...producers, consumer]);
      await server.exited();
    }
    assert.ok(acked.size > 0, "some enqueues were acknowledged");
    const check = new DatabaseSync(db);
    try {
      const rows = check.prepare("SELECT id, state FROM jobs").all() as {
        id: number;
        state: string;
      }[];
      const stored = new Map(rows.map((r) => [r.id, r.state]));
      for (const id of acked) assert.ok(stored.has(id), `acknowledged job ${id} is stored`);
      assert.ok(completed.size > 0, "the run acknowledged some acks before the kill");
      for (const id of completed) assert.equal(stored.get(id), "done", `job ${id} stays done`);
      const integrity = check.prepare("PRAGMA integrity_check").get() as Record<string, string>;
      assert.equal(Object.values(integrity)[0], "ok");
    } finally {
      check.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("SIGTERM shuts down cleanly: exit 0 and the WAL checkpointed", async () => {
  await using tmp = await tempDir("tegami-term-");
  const dir = tmp.path;
  const server = await spawnServer(["--db", `${dir}/tegami.db`]);
  const answer = await send(server.url, "POST", "/v1/queues/t/jobs", { payload: 1 });
  assert.equal(answer.status, 201);
  server.kill("SIGTERM");
  const { code, stderr } = await server.exited();
  assert.equal(code, 0, stderr);
  assert.match(stderr, /stopped: database closed cleanly/);
  const wal = await Deno.stat(`${dir}/tegami.db-wal`).catch(() => null);
  assert.ok(wal === null || wal.size === 0, "the WAL is empty after a clean stop");
});

Deno.test("serve --page-size makes a new database with that page size, and a file keeps its own", async () => {
  await using tmp = await tempDir("tegami-pages-");
  const db = `${tmp.path}/tegami.db`;
  for (const args of [["--page-size", "1KiB"], ["--page-size", "8KiB"], []]) {
    const server = await spawnServer(["--db", db, ...args]);
    const answer = await send(server.url, "POST", "/v1/queues/t/jobs", { payload: args });
    assert.equal(answer.status, 201);
    server.kill("SIGTERM");
    assert.equal((await server.exited()).code, 0);
    assert.equal(pageSizeOf(db), 1024, `after serve ${args.join(" ")}`);
  }
  const refused = await runProgram(["serve", "--port", "0", "--db", db, "--page-size", "1000"]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /--page-size.*power of two/);
});

Deno.test("a second server on the same database exits 1 with a clear message", async () => {
  await using tmp = await tempDir("tegami-lock-");
  const dir = tmp.path;
  await using first = await spawnServer(["--db", `${dir}/tegami.db`]);
  const second = await runProgram(["serve", "--port", "0", "--db", `${dir}/tegami.db`]);
  assert.equal(second.code, 1);
  assert.match(second.stderr, /another tegami server is using it/);
  assert.equal(second.stderr.trim().split("\n").length, 1, "one line");
  assert.ok(first.url.startsWith("http://"));
});

Deno.test("a non-loopback bind without tokens exits 2 unless --insecure", async () => {
  const refused = await runProgram(["serve", "--host", "0.0.0.0", "--db", ":memory:"]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /--tokens|--insecure/);
});

Deno.test("--help teaches every flag and --version prints the version", async () => {
  const help = await runProgram(["serve", "--help"]);
  assert.equal(help.code, 0);
  for (const flag of ["--db", "--port", "--sync", "--retain-done", "TEGAMI_PORT"]) {
    assert.ok(help.stdout.includes(flag), `help mentions ${flag}`);
  }
  const version = await runProgram(["--version"]);
  assert.match(version.stdout, /^tegami \d+\.\d+\.\d+/);
});

Deno.test("a mistake in the flags or the environment exits 2 with a one-line reason naming it", async () => {
  // Exit code 2 tells a service manager that restarting will not help (RestartPreventExitStatus).
  const mistakes: [string[], Record<string, string>, RegExp][] = [
    [["--port", "nope"], {}, /--port/],
    [["--bogus"], {}, /Unknown flag --bogus/],
    [["extra"], {}, /Unexpected argument "extra"/],
    [["--max-body", "512KiB"], {}, /--max-body.*at least --max-payload/],
    [[], { TEGAMI_PORT: "nope" }, /TEGAMI_PORT/],
  ];
  for (const [args, env, reason] of mistakes) {
    const bad = await runProgram(["serve", "--db", ":memory:", ...args], { env });
    assert.equal(bad.code, 2, `${args.join(" ")}: ${bad.stderr}`);
    assert.match(bad.stderr, reason);
    assert.equal(bad.stderr.trim().split("\n").length, 1, "one line");
  }
});

Deno.test("SIGTERM the instant the server has started still stops it cleanly", async () => {
  await using tmp = await tempDir("tegami-term-early-");
  const dir = tmp.path;
  for (let i = 0; i < 3; i++) {
    const server = await spawnServer(["--db", `${dir}/tegami.db`]);
    server.kill("SIGTERM");
    const { code, stderr } = await server.exited();
    assert.equal(code, 0, stderr);
  }
});
