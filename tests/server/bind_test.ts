/**
 * Refusal to listen beyond loopback without tokens (DESIGN §3, §7 exit codes), through the real
 * program: `tegami serve --host 0.0.0.0` without `--tokens` exits 2 with a one-line reason,
 * by flag or by env var; with `--insecure` it really starts and serves; with `--tokens` it
 * starts and demands them. The servers bind 0.0.0.0 but the tests only ever connect to
 * 127.0.0.1. (Which host names count as loopback is unit-tested in config_test.ts.)
 */

import assert from "node:assert/strict";
import { runProgram, spawnServer } from "../helpers/process_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";

async function withTempDir<T>(run: (dir: string) => Promise<T>): Promise<T> {
  await using tmp = await tempDir("tegami-bind-");
  const dir = tmp.path;
  return await run(dir);
}

/** The bound port of a server listening on 0.0.0.0, reached over 127.0.0.1. */
function loopbackUrl(url: string): string {
  const port = new URL(url).port;
  return `http://127.0.0.1:${port}`;
}

Deno.test("serve on a non-loopback host without tokens exits 2 with a one-line reason", async () => {
  await withTempDir(async (dir) => {
    const cases: [string, string[], Record<string, string>][] = [
      ["--host 0.0.0.0", ["--host", "0.0.0.0"], {}],
      ["--host ::", ["--host", "::"], {}],
      ["--host 192.0.2.10", ["--host", "192.0.2.10"], {}],
      ["TEGAMI_HOST=0.0.0.0", [], { TEGAMI_HOST: "0.0.0.0" }],
      ["TEGAMI_INSECURE=false", ["--host", "0.0.0.0"], { TEGAMI_INSECURE: "false" }],
      ["an empty TEGAMI_TOKENS", ["--host", "0.0.0.0"], { TEGAMI_TOKENS: "" }],
      ["::ffff:127.0.0.1 (loopback, but not spelt as such)", ["--host", "::ffff:127.0.0.1"], {}],
    ];
    for (const [what, args, env] of cases) {
      const run = await runProgram(
        ["serve", "--port", "0", "--db", `${dir}/t.db`, ...args],
        { env },
      );
      assert.equal(run.code, 2, `${what}: ${run.stderr}`);
      const lines = run.stderr.trim().split("\n");
      assert.equal(lines.length, 1, `${what}: one line, got ${run.stderr}`);
      assert.match(lines[0], /^tegami: .*--tokens.*--insecure/, what);
      assert.equal(run.stdout, "");
    }
    // Nothing was created: the refusal comes before the database is opened.
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  });
});

Deno.test("serve --host 0.0.0.0 --insecure starts and answers on 127.0.0.1", async () => {
  await withTempDir(async (dir) => {
    for (
      const [args, env] of [
        [["--host", "0.0.0.0", "--insecure"], {}],
        [[], { TEGAMI_HOST: "0.0.0.0", TEGAMI_INSECURE: "true" }],
      ] as [string[], Record<string, string>][]
    ) {
      await using server = await spawnServer(["--db", `${dir}/t.db`, ...args], { env });
      assert.match(server.url, /^http:\/\/0\.0\.0\.0:\d+$/);
      const base = loopbackUrl(server.url);
      const health = await fetch(`${base}/healthz`);
      assert.deepEqual(await health.json(), { status: "ok" });
      const enqueue = await fetch(`${base}/v1/queues/q/jobs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"payload":1}',
      });
      assert.equal(enqueue.status, 201, "auth is off: anyone who can reach it may enqueue");
      await enqueue.body?.cancel();
      server.kill("SIGTERM");
      assert.equal((await server.exited()).code, 0);
    }
  });
});

Deno.test("serve --host 0.0.0.0 --tokens starts without --insecure and demands a token", async () => {
  await withTempDir(async (dir) => {
    const token = "bind-test-token-0123456789";
    await Deno.writeTextFile(
      `${dir}/tokens.json`,
      JSON.stringify([{ name: "ops", token, scopes: ["admin"] }]),
    );
    await using server = await spawnServer([
      "--db",
      `${dir}/t.db`,
      "--host",
      "0.0.0.0",
      "--tokens",
      `${dir}/tokens.json`,
    ]);
    const base = loopbackUrl(server.url);
    const refused = await fetch(`${base}/v1/queues`);
    assert.equal(refused.status, 401);
    await refused.body?.cancel();
    const allowed = await fetch(`${base}/v1/queues`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(allowed.status, 200);
    await allowed.body?.cancel();
  });
});
