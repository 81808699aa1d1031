/**
 * `tegami flow` (create from a file or stdin, show, list, cancel) and `tegami job ID --wait`, run
 * as the real program against a real server.
 */

import assert from "node:assert/strict";
import { runCli as tegami } from "../helpers/process_server.ts";
import { startTestServer } from "../helpers/test_server.ts";

const FLOW = {
  key: "order-42",
  nodes: [
    { ref: "fetch", queue: "images", payload: { url: "https://example.com/a.png" } },
    { ref: "resize", queue: "images", payload: { size: 512 }, depends_on: ["fetch"] },
    {
      ref: "notify",
      queue: "mail",
      payload: null,
      depends_on: [{ ref: "resize", on_failure: "run" }],
    },
  ],
};

Deno.test("tegami flow creates a flow from a file or stdin, shows, lists and cancels it", async () => {
  await using server = await startTestServer({ realTime: true });
  const url = ["--url", server.url];
  const file = `${server.dir}/flow.json`;
  await Deno.writeTextFile(file, JSON.stringify(FLOW));

  const created = await tegami(["flow", "create", file, ...url]);
  assert.deepEqual([created.code, created.stdout], [0, "flow 1: created 3 jobs\n"], created.stderr);
  const again = await tegami(["flow", "create", "-", "--json", ...url], JSON.stringify(FLOW));
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(JSON.parse(again.stdout), {
    id: 1,
    deduplicated: true,
    jobs: { fetch: 1, resize: 2, notify: 3 },
  });

  const show = await tegami(["flow", "show", "1", ...url]);
  assert.equal(show.code, 0, show.stderr);
  const [head, ...table] = show.stdout.trimEnd().split("\n");
  assert.match(
    head,
    /^flow 1 \(key "order-42"\): 2 blocked, 1 pending; created \S+, not finished$/,
  );
  assert.deepEqual(table.map((line) => line.trim().split(/ {2,}/)), [
    ["REF", "JOB", "QUEUE", "STATE", "DEPENDS ON"],
    ["fetch", "1", "images", "pending"],
    ["resize", "2", "images", "blocked", "fetch"],
    ["notify", "3", "mail", "blocked", "resize (run)"],
  ]);

  await tegami(["flow", "create", "-", ...url], JSON.stringify({ nodes: FLOW.nodes }));
  const list = await tegami(["flow", "list", "--limit", "1", ...url]);
  assert.equal(list.code, 0, list.stderr);
  const rows = list.stdout.trimEnd().split("\n").map((line) => line.trim().split(/ {2,}/));
  assert.deepEqual(rows[0], ["ID", "KEY", "CREATED", "FINISHED", "JOBS"]);
  assert.deepEqual([rows[1][0], rows[1][1], rows[1][3], rows[1][4]], [
    "1",
    "order-42",
    "-",
    "2 blocked, 1 pending",
  ]);
  assert.equal(list.stderr, "more: --after 1\n");
  const rest = await tegami(["flow", "list", "--after", "1", "--json", ...url]);
  assert.deepEqual(rest.stdout.trimEnd().split("\n").map((l) => JSON.parse(l).id), [2]);
  const newest = await tegami(["flow", "list", "--newest", "--json", ...url]);
  assert.deepEqual(newest.stdout.trimEnd().split("\n").map((l) => JSON.parse(l).id), [2, 1]);

  const cancel = await tegami(["flow", "cancel", "1", ...url]);
  assert.deepEqual([cancel.code, cancel.stdout], [0, "flow 1: cancelled 3 jobs\n"], cancel.stderr);
  const shown = await tegami(["flow", "show", "1", "--json", ...url]);
  assert.deepEqual(JSON.parse(shown.stdout).counts.cancelled, 3);
});

Deno.test("tegami flow says what the server refused, and what the arguments lack", async () => {
  await using server = await startTestServer({ realTime: true });
  const url = ["--url", server.url];
  const cycle = {
    nodes: [
      { ref: "a", queue: "q", payload: 1, depends_on: ["b"] },
      { ref: "b", queue: "q", payload: 1, depends_on: ["a"] },
    ],
  };
  const refused = await tegami(["flow", "create", "-", ...url], JSON.stringify(cycle));
  assert.equal(refused.code, 1);
  assert.equal(
    refused.stderr,
    'tegami flow: validation_failed: Invalid "nodes[0].depends_on": node "a" is on a cycle: ' +
      "its prerequisites depend on it\n",
  );
  const missing = await tegami(["flow", "show", "9", ...url]);
  assert.deepEqual(
    [missing.code, missing.stderr],
    [1, "tegami flow: not_found: Cannot find flow 9: no such flow\n"],
  );
  const usage: [string[], string][] = [
    [["flow"], 'tegami flow: expected create, show, list or cancel; got ""\n'],
    [["flow", "show"], "tegami flow: expected show ID, the flow's number\n"],
    [["flow", "create", `${server.dir}/none.json`], "tegami flow: Cannot read"],
  ];
  for (const [args, stderr] of usage) {
    const out = await tegami([...args, ...url]);
    assert.equal(out.code, 2, args.join(" "));
    assert.ok(out.stderr.startsWith(stderr), out.stderr);
  }
});

Deno.test("tegami job ID --wait shows the job once it has ended; its exit code says how", async () => {
  await using server = await startTestServer({ realTime: true });
  const url = ["--url", server.url];
  const enqueue = async (payload: unknown) =>
    (await server.request("POST", "/v1/queues/w/jobs", { payload })).body.id as number;

  const id = await enqueue(1);
  const waiting = tegami(["job", String(id), "--wait", "30s", ...url]);
  const leased = await server.request("POST", "/v1/queues/w/leases", { wait_ms: 5000 });
  const job = leased.body.jobs[0];
  await server.request("POST", `/v1/jobs/${id}/ack`, { token: job.lease.token, result: 42 });
  const done = await waiting;
  assert.equal(done.code, 0, done.stderr);
  assert.deepEqual([JSON.parse(done.stdout).state, JSON.parse(done.stdout).result], ["done", 42]);

  const cancelled = await enqueue(2);
  await server.request("DELETE", `/v1/jobs/${cancelled}`);
  const failed = await tegami(["job", String(cancelled), "--wait", "30s", ...url]);
  assert.deepEqual([failed.code, JSON.parse(failed.stdout).state], [1, "cancelled"]);

  const pending = await enqueue(3);
  const started = Date.now();
  const timedOut = await tegami(["job", String(pending), "--wait", "500ms", ...url]);
  assert.ok(Date.now() - started >= 500);
  assert.equal(timedOut.code, 3);
  assert.equal(JSON.parse(timedOut.stdout).state, "pending");
  assert.equal(timedOut.stderr, `tegami job: job ${pending} is still pending after 500ms\n`);
});

Deno.test("tegami flow --help teaches the subcommands and what a flow is", async () => {
  const help = await tegami(["flow", "--help"]);
  assert.equal(help.code, 0);
  for (const text of ["Usage: tegami flow", "create FILE", "blocked", "--newest"]) {
    assert.ok(help.stdout.includes(text), text);
  }
});
