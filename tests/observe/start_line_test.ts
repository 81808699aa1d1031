/**
 * The `tegami started` line: what durability means on each store, and a descriptor limit that
 * is a number or says why it is unknown, never `null`.
 */

import assert from "node:assert/strict";
import { resolveServeConfig, type ServeConfig } from "../../lib/config/serve_config.ts";
import { createLogger } from "../../lib/observe/log.ts";
import { startServer } from "../../lib/server.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";

// deno-lint-ignore no-explicit-any
type Entry = Record<string, any>;

/** Starts and stops a server with `config`, and returns its `tegami started` line. */
async function startLine(config: Partial<ServeConfig>): Promise<Entry> {
  const lines: string[] = [];
  const server = await startServer({
    config: { ...resolveServeConfig([], {}), port: 0, host: "127.0.0.1", ...config },
    log: createLogger({ format: "json", write: (line) => lines.push(line) }),
  });
  await server.close();
  const started = lines.map((line) => JSON.parse(line)).find((e) => e.msg === "tegami started");
  assert.ok(started, lines.join("\n"));
  return started;
}

Deno.test("the startup line on SQLite names the sync mode and what a 2xx survives", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami-start-line-" });
  try {
    const full = await startLine({ db: `${dir}/full.db` });
    assert.equal(full.sync, "full");
    assert.equal(full.durability, "answered after the WAL fsync; survives power loss");
    const normal = await startLine({ db: `${dir}/normal.db`, sync: "normal" });
    assert.equal(normal.sync, "normal");
    assert.match(normal.durability, /without fsync; a power loss may lose the last commits/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the startup line shows the descriptor limit as a number or unknown with a reason", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami-start-line-" });
  try {
    const started = await startLine({ db: `${dir}/tegami.db` });
    const limit = started.descriptor_limit;
    assert.ok(
      (typeof limit === "number" && limit > 0) ||
        (typeof limit === "string" && /^unknown \(.+\)$/.test(limit)),
      `descriptor_limit=${JSON.stringify(limit)}`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const pg = await pgTestDatabase();

Deno.test({
  name: "the startup line on PostgreSQL has no --sync and names synchronous_commit",
  ignore: pg === null,
  fn: async () => {
    const schema = pg!.schema();
    try {
      const started = await startLine({ ...pgServerConfig(pg!, schema), sync: "full" });
      assert.equal("sync" in started, false, JSON.stringify(started));
      assert.match(started.durability, /synchronous_commit/);
    } finally {
      await pg!.dropSchema(schema);
    }
  },
});

dropPgTestDatabaseAfterwards(pg);
