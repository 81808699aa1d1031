import assert from "node:assert/strict";
import { runClientCommand } from "../../lib/cli/client_commands.ts";
import { runCli as tegami } from "../helpers/process_server.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";

Deno.test("tegami backup --to writes a copy and reports it; --verify checks it", async () => {
  await using tmp = await tempDir("tegami-backup-cli-");
  await using server = await startTestServer({ realTime: true, config: { backupDir: tmp.path } });
  await server.request("POST", "/v1/queues/q/jobs", { jobs: [{ payload: 1 }, { payload: 2 }] });
  await server.request("POST", "/v1/queues/q/leases", { max: 1 });
  const target = `${tmp.path}/copy.db`;
  const made = await tegami(["backup", "--url", server.url, "--to", target]);
  assert.equal(made.code, 0, made.stderr);
  assert.match(made.stdout, new RegExp(`^${target}: written in \\d+\\.\\ds\\n`));
  assert.match(made.stdout, /\n {2}integrity {7}ok\n/);
  assert.match(
    made.stdout,
    /jobs {12}2: blocked 0, pending 1, delayed 0, leased 1, done 0, dead 0/,
  );
  assert.match(made.stdout, /leases {10}1 held, the last ending 20\d\d-.*returns each to pending/);
  assert.equal(made.stderr, "", "no progress line when stderr is not a terminal");
  const checked = await tegami(["backup", "--verify", target, "--json"]);
  assert.equal(checked.code, 0, checked.stderr);
  const report = JSON.parse(checked.stdout);
  assert.equal(report.path, target);
  assert.equal(report.counts.pending, 1);
  assert.equal(report.bytes, (await Deno.stat(target)).size);
});

Deno.test("tegami backup --verify exits 1 for a file that is not a copy and for a missing one", async () => {
  await using tmp = await tempDir("tegami-backup-cli-");
  await Deno.writeTextFile(`${tmp.path}/notes.txt`, "hello\n");
  const notSqlite = await tegami(["backup", "--verify", `${tmp.path}/notes.txt`]);
  assert.equal(notSqlite.code, 1);
  assert.equal(notSqlite.stdout, "");
  assert.match(
    notSqlite.stderr,
    /^tegami backup: .*notes\.txt is not a sound tegami backup: not a SQLite database/,
  );
  const missing = await tegami(["backup", "--verify", `${tmp.path}/none.db`]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /cannot open it/);
});

Deno.test("tegami backup exits 2 for a usage mistake and 1 when the server refuses", async () => {
  await using server = await startTestServer();
  for (
    const args of [
      ["backup"],
      ["backup", "--to", "a.db", "--verify", "b.db"],
      ["backup", "--to", "a.db", "extra"],
    ]
  ) {
    const result = await tegami([...args, "--url", server.url]);
    assert.equal(result.code, 2, args.join(" "));
    assert.match(result.stderr, /^tegami backup: /);
  }
  // A path the server's host cannot write to.
  const refused = await tegami(["backup", "--url", server.url, "--to", "/no/such/dir/x.db"]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /^tegami backup: validation_failed: .*does not exist/);
  const gone = await tegami(["backup", "--url", "http://127.0.0.1:9", "--to", "/tmp/x.db"]);
  assert.equal(gone.code, 1);
  assert.match(gone.stderr, /^tegami backup: Cannot reach http:\/\/127\.0\.0\.1:9/);
});

Deno.test("tegami backup shows its progress on a terminal, on stderr, ending the line", async () => {
  await using tmp = await tempDir("tegami-backup-cli-");
  await using server = await startTestServer({ realTime: true, config: { backupDir: tmp.path } });
  let out = "";
  let err = "";
  const code = await runClientCommand("backup", ["--url", server.url, "--to", `${tmp.path}/c.db`], {
    stdin: new ReadableStream(),
    out: (text) => out += text,
    err: (text) => err += text,
    isTerminal: true,
    stdinBytes: null,
    env: {},
    stopRequested: new Promise(() => {}),
  });
  assert.equal(code, 0, err);
  assert.match(err, /^\rbacking up: 0\.\d MiB/);
  assert.match(err, /\rbacking up: 0\.\d MiB of 0\.\d MiB \(100%\) +\n$/);
  assert.match(out, /c\.db: written in/);
});

Deno.test("tegami --help lists backup --to and --verify", async () => {
  const help = await tegami(["--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /backup --to FILE +have the server write a checked, compacted copy/);
  assert.match(help.stdout, /backup --verify FILE +check a copy offline/);
});
