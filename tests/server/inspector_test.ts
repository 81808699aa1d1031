/** The store-neutral inspector reads the same jobs from SQLite and from PostgreSQL. */

import assert from "node:assert/strict";
import { openInspector } from "../helpers/inspector.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";
import { startTestServer } from "../helpers/test_server.ts";

const db = await pgTestDatabase();

/** Runs the same story on a server and answers what the inspector then finds. */
async function story(config: Record<string, unknown>) {
  await using server = await startTestServer({ config });
  await server.request("POST", "/v1/queues/q/jobs", { payload: { n: 1 } });
  await server.request("POST", "/v1/queues/q/jobs", { payload: { n: 2 } });
  await server.request("POST", "/v1/queues/other/jobs", { payload: 3 });
  const leased = await server.request("POST", "/v1/queues/q/leases", { max: 1 });
  const [job] = leased.body.jobs;
  await server.request("POST", `/v1/jobs/${job.id}/ack`, { token: job.lease.token, result: 7 });
  await server.stop();
  const dbName = (config.db as string | undefined) ?? server.dbPath;
  await using inspector = openInspector(dbName, config.pgSchema as string | undefined);
  return {
    engine: inspector.engine,
    integrity: await inspector.integrity(),
    all: (await inspector.jobs()).map((j) => [j.queue, j.state, j.payload, j.attempts, j.result]),
    q: (await inspector.jobs("q")).map((j) => j.state),
  };
}

const expected = {
  integrity: "ok",
  all: [
    ["q", "done", '{"n":1}', 1, "7"],
    ["q", "pending", '{"n":2}', 0, null],
    ["other", "pending", "3", 0, null],
  ],
  q: ["done", "pending"],
};

Deno.test("openInspector() reads the jobs of a SQLite file", async () => {
  assert.deepEqual(await story({}), { engine: "sqlite", ...expected });
});

Deno.test({
  name: "openInspector() reads the same jobs from a PostgreSQL schema",
  ignore: db === null,
  fn: async () => {
    const schema = db!.schema();
    try {
      assert.deepEqual(await story(pgServerConfig(db!, schema)), {
        engine: "postgres",
        ...expected,
      });
    } finally {
      await db!.dropSchema(schema);
    }
  },
});

dropPgTestDatabaseAfterwards(db);
