/**
 * The test-only `--unsafe-fault` switch that the crash campaign's positive controls use: it must
 * really break the server as described, and it must never pass unnoticed.
 */

import assert from "node:assert/strict";
import { ConfigError } from "../lib/config/flags.ts";
import { resolveServeConfig } from "../lib/config/serve_config.ts";
import { GroupCommit, type Transactor } from "../lib/store/group_commit.ts";
import { createLogger } from "../lib/observe/log.ts";
import { startServer } from "../lib/server.ts";
import { runProgram } from "./helpers/process_server.ts";
import { send } from "./helpers/test_server.ts";

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

Deno.test("resolveServeConfig() reads --unsafe-fault and TEGAMI_UNSAFE_FAULT, off by default", () => {
  assert.equal(resolveServeConfig([], {}).unsafeFault, null);
  assert.equal(
    resolveServeConfig(["--unsafe-fault", "ack-before-commit"], {}).unsafeFault,
    "ack-before-commit",
  );
  assert.equal(
    resolveServeConfig([], { TEGAMI_UNSAFE_FAULT: "any-token" }).unsafeFault,
    "any-token",
  );
  assert.throws(
    () => resolveServeConfig(["--unsafe-fault", "lose-everything"], {}),
    (error: unknown) => error instanceof ConfigError && error.field === "unsafe-fault",
  );
});

Deno.test("GroupCommit with unsafeAnswerBeforeCommitMs answers callers before COMMIT", async () => {
  const db = new FakeDb();
  const commits = new GroupCommit(db, () => {}, { unsafeAnswerBeforeCommitMs: 50 });
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

Deno.test("a server with --unsafe-fault any-token logs a loud warning and acks with any token", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami-fault-" });
  try {
    const lines: string[] = [];
    const config = {
      ...resolveServeConfig(["--unsafe-fault", "any-token", "--log-level", "error"], {}),
      db: `${dir}/tegami.db`,
      port: 0,
    };
    const log = createLogger({ level: config.logLevel, write: (line) => lines.push(line) });
    await using server = await startServer({ config, log });
    // Written at error level, which no --log-level hides.
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(lines[0], /ERROR UNSAFE FAULT "any-token" IS ON/);
    await send(server.url, "POST", "/v1/queues/q/jobs", { payload: 1 });
    const [job] = (await send(server.url, "POST", "/v1/queues/q/leases", {})).body.jobs;
    const ack = await send(server.url, "POST", `/v1/jobs/${job.id}/ack`, { token: "forged" });
    assert.equal(ack.status, 200, "the fault accepts a forged token");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("serve --help marks --unsafe-fault as test only", async () => {
  const help = await runProgram(["serve", "--help"]);
  assert.match(help.stdout, /--unsafe-fault FAULT\s+TEST ONLY, never in production/);
  assert.match(help.stdout, /env TEGAMI_UNSAFE_FAULT; default none/);
});
