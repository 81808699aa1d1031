/**
 * `tegami serve` as a process: a start refused for the address or the TLS files writes nothing
 * to disk (no database, no WAL, no lock file).
 */

import assert from "node:assert/strict";
import { runProgram } from "../helpers/process_server.ts";

/** The names in `dir`, sorted. */
async function filesIn(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names.sort();
}

Deno.test("tegami serve on a port already taken exits 1 and creates no database or lock", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami-serve-cli-" });
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (taken.addr as Deno.NetAddr).port;
  try {
    const run = await runProgram([
      "serve",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--db",
      `${dir}/tegami.db`,
    ]);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, new RegExp(`^tegami: Cannot listen on 127\\.0\\.0\\.1:${port}: `));
    assert.deepEqual(await filesIn(dir), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tegami serve with TLS files that do not load exits 1 and creates no database", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami-serve-cli-" });
  const junk = `${dir}/junk.pem`;
  await Deno.writeTextFile(junk, "not a certificate\n");
  try {
    for (const cert of [`${dir}/none.pem`, junk]) {
      const run = await runProgram([
        "serve",
        "--port",
        "0",
        "--db",
        `${dir}/tegami.db`,
        "--tls-cert",
        cert,
        "--tls-key",
        junk,
      ]);
      assert.equal(run.code, 1, run.stderr);
      assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
      assert.deepEqual(await filesIn(dir), ["junk.pem"], run.stderr);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
