/**
 * The SQS API driven by Debian's boto3 (`python3-boto3`, the query protocol with XML answers):
 * every action, FIFO, batches with partial failures, stale handles and errors
 * (`boto3_client.py actions`), and signatures with --tokens in the header and presigned forms,
 * refused when wrong, unknown or an hour old (`boto3_client.py auth`), and the queue attributes
 * and tags tegami keeps, after a restart too (`boto3_client.py kept`), on SQLite and PostgreSQL.
 */

import assert from "node:assert/strict";
import { dropPgTestDatabaseAfterwards } from "../helpers/pg.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { pg, STORES } from "./sqs_fixture.ts";

/** Debian's Python, which holds python3-boto3 (another `python3` on PATH may hold another). */
const PYTHON = "/usr/bin/python3";
const SCRIPT = new URL("./boto3_client.py", import.meta.url).pathname;

// CI installs python3-boto3 (.ci/run), so there a missing boto3 fails the tests instead.
const boto3 = new Deno.Command(PYTHON, { args: ["-c", "import boto3"] }).outputSync().success ||
  Deno.env.get("CI") === "true";
if (!boto3) console.warn(`Skipping the boto3 tests: ${PYTHON} cannot import boto3`);

async function runScript(args: string[]): Promise<void> {
  const out = await new Deno.Command(PYTHON, { args: [SCRIPT, ...args] }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.ok(out.success && text.trim().endsWith("ok"), text);
}

for (const store of STORES) {
  Deno.test({
    name: `${store.name}: boto3 (query protocol) runs every action`,
    ignore: store.ignore || !boto3,
    fn: async () => {
      await using server = await startTestServer({ realTime: true, config: store.config() });
      await runScript(["actions", server.url]);
    },
  });
}

for (const store of STORES) {
  Deno.test({
    name: `${store.name}: boto3 keeps a queue's attributes and tags across a restart`,
    ignore: store.ignore || !boto3,
    fn: async () => {
      const dir = await Deno.makeTempDir({ prefix: "tegami-boto3-kept-" });
      const config = store.config();
      try {
        {
          await using first = await startTestServer({ realTime: true, dir, config });
          await runScript(["kept", first.url, "write"]);
        }
        await using again = await startTestServer({ realTime: true, dir, config });
        await runScript(["kept", again.url, "read"]);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}

Deno.test({
  name: "boto3 signs with a token's name and token; wrong, unknown and old signatures are refused",
  ignore: !boto3,
  fn: async () => {
    const token = "sqs-secret-token-0123456789";
    await using server = await startTestServer({
      realTime: true,
      tokens: [{ name: "workers", token, scopes: ["admin"] }],
    });
    await runScript(["auth", server.url, "workers", token]);
  },
});

dropPgTestDatabaseAfterwards(pg);
