/**
 * The faulty store the crash campaign's positive controls use: it must really break the server
 * as described, it must never pass unnoticed, and none of it may reach `tegami serve`.
 */

import assert from "node:assert/strict";
import type { Transactor } from "../../lib/store/group_commit.ts";
import { createLogger } from "../../lib/observe/log.ts";
import { resolveServeConfig } from "../../lib/config/serve_config.ts";
import { startServer } from "../../lib/server.ts";
import { runProgram, spawnServer } from "../helpers/process_server.ts";
import { send } from "../helpers/test_server.ts";
import { SqliteStore } from "../../lib/store/sqlite/sqlite_store.ts";
import {
  AnswerBeforeCommit,
  EARLY_EXPIRY_MS,
  endLeasesEarly,
  faultyStoreFactory,
} from "./faulty_store.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { HANDED_ALL } from "../store/store_suite.ts";

const FAULTY_SERVER = new URL("./faulty_server.ts", import.meta.url).pathname;

class FakeDb implements Transactor {
  calls: string[] = [];
  begin(): void {
    this.calls.push("begin");
  }
  commit(): void {
    this.calls.push("commit");
  }
  rollback(): void {
    this.calls.push("rollback");
  }
  mark(): void {}
  release(): void {}
  undo(): void {}
}

Deno.test("AnswerBeforeCommit answers callers before COMMIT", async () => {
  const db = new FakeDb();
  const commits = new AnswerBeforeCommit(db, () => {}, 50);
  const answers = [commits.submit(() => 1), commits.submit(() => 2)];
  commits.flush();
  assert.deepEqual(await Promise.all(answers), [1, 2]);
  assert.deepEqual(db.calls, ["begin"], "answered while the transaction is still open");
  const later = commits.submit(() => 3);
  commits.flush();
  assert.equal(await later, 3);
  assert.deepEqual(db.calls, ["begin"], "later writes join the open transaction");
  await commits.drained();
  assert.deepEqual(db.calls, ["begin", "commit"]);
});

Deno.test("a server over the any-token store acks a leased job with a forged token", async () => {
  await using tmp = await tempDir("tegami-fault-");
  const dir = tmp.path;
  const config = { ...resolveServeConfig([], {}), db: `${dir}/tegami.db`, port: 0 };
  const log = createLogger({ level: "error", write: () => {} });
  await using server = await startServer({
    config,
    log,
    openStore: faultyStoreFactory("any-token"),
  });
  await send(server.url, "POST", "/v1/queues/q/jobs", { payload: 1 });
  const [job] = (await send(server.url, "POST", "/v1/queues/q/leases", {})).body.jobs;
  const ack = await send(server.url, "POST", `/v1/jobs/${job.id}/ack`, { token: "forged" });
  assert.equal(ack.status, 200, "the fault accepts a forged token");
  assert.equal((await send(server.url, "GET", `/v1/jobs/${job.id}`)).body.state, "done");
});

Deno.test("the early-expiry store leases a job again while its first lease is still live", async () => {
  await using tmp = await tempDir("tegami-fault-");
  const inner = SqliteStore.open({
    path: `${tmp.path}/t.db`,
    sync: "normal",
    policy: { defaultLeaseMs: 30_000, retryDelayMs: () => 1000 },
  });
  try {
    const store = endLeasesEarly(inner);
    const t = 1_700_000_000_000;
    const job = {
      payload: "1",
      priority: 0,
      key: null,
      run_at: t,
      max_attempts: 5,
      lease_ms: null,
      backoff: null,
    };
    await store.enqueue("q", [job], t);
    const [first] = await store.claim("q", 1, 1000, t);
    assert.equal(first.lease.expires_at, t + 1000);
    assert.equal(await store.nextDeadline(t), t + 1000 - EARLY_EXPIRY_MS);
    // 150 ms before the first lease runs out, it is over and the job goes to someone else.
    const now = t + 1000 - 150;
    assert.deepEqual((await store.tick(now, HANDED_ALL)).expired.map((e) => e.id), [first.job.id]);
    const [second] = await store.claim("q", 1, 1000, now);
    assert.equal(second.job.id, first.job.id);
    assert.equal(second.job.attempts, 2);
    assert.ok(first.lease.expires_at > now, "two leases live at once");
    // The honest store keeps the first lease until it runs out.
    await inner.enqueue("q", [job], now);
    const [other] = await inner.claim("q", 1, 1000, now);
    assert.deepEqual((await inner.tick(now + 850, HANDED_ALL)).expired, []);
    assert.equal(other.job.attempts, 1);
  } finally {
    await inner.close();
  }
});

Deno.test("the faulty server says so on stderr before it starts", async () => {
  await using tmp = await tempDir("tegami-fault-");
  const dir = tmp.path;
  await using server = await spawnServer(
    ["--fault", "ack-before-commit", "--db", `${dir}/t.db`],
    {
      script: FAULTY_SERVER,
    },
  );
  server.kill("SIGTERM");
  const { code, stderr } = await server.exited();
  assert.equal(code, 0, stderr);
  assert.match(stderr.split("\n")[0], /^UNSAFE FAULT "ack-before-commit" IS ON/);
});

Deno.test("tegami serve knows no fault flag and its help speaks of none", async () => {
  const help = await runProgram(["serve", "--help"]);
  assert.equal(help.code, 0);
  assert.doesNotMatch(help.stdout, /\bfault|TEST ONLY|unsafe/i);
  const refused = await runProgram(["serve", "--unsafe-fault", "any-token", "--port", "0"]);
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /Unknown flag --unsafe-fault/);
});
