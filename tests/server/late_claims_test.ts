/**
 * A whole server under load with short leases and a slow database: 8 HTTP callers lease jobs
 * that allow one attempt and never ack them, while one claim in four is answered after its
 * leases' whole length. Every job must reach a caller, as its first attempt, before it ends dead
 * (tests/torture/late_claims.ts; `deno task soak:attempts` runs 100,000 jobs).
 */

import assert from "node:assert/strict";
import type { ServeConfig } from "../../lib/config/serve_config.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { runLateClaims } from "../torture/late_claims.ts";

async function deliversEveryJobBeforeItDies(config: Partial<ServeConfig>): Promise<void> {
  const figures = await runLateClaims({
    config,
    jobs: 2_000,
    callers: 8,
    leaseMs: 100,
    slowEvery: 4,
    deadlineMs: 30_000,
  });
  assert.equal(figures.dead, 2_000, "every job ran out");
  assert.equal(figures.laterAttempts, 0, "each job was delivered as its first attempt");
  assert.equal(figures.delivered, 2_000, `${2_000 - figures.delivered} jobs died undelivered`);
  assert.ok(figures.slowestCallMs >= 150, "some claims were answered after their leases' end");
}

Deno.test("sqlite: under load with slow claims, every job is delivered before it ends dead", async () => {
  await using dir = await tempDir();
  await deliversEveryJobBeforeItDies({ db: `${dir.path}/t.db` });
});

const db = await pgTestDatabase();

Deno.test({
  name: "postgres: under load with slow claims, every job is delivered before it ends dead",
  ignore: db === null,
  fn: async () => {
    const schema = db!.schema();
    try {
      await deliversEveryJobBeforeItDies(pgServerConfig(db!, schema));
    } finally {
      await db!.dropSchema(schema);
    }
  },
});

dropPgTestDatabaseAfterwards(db);
