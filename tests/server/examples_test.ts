import assert from "node:assert/strict";
import { TegamiClient } from "../../lib/client/mod.ts";
import { FakePaymentService, startWorker } from "../../examples/checkpoint_worker.ts";
import { startTestServer } from "../helpers/test_server.ts";

const EXAMPLES = new URL("../../examples/", import.meta.url).pathname;
const ROOT = new URL("../../", import.meta.url).pathname;
const README_URL = "http://127.0.0.1:7700";

/** The README's first `sh` block under the heading `## title`. */
async function readmeShell(title: string): Promise<string> {
  const readme = await Deno.readTextFile(`${ROOT}README.md`);
  const section = readme.slice(readme.indexOf(`\n## ${title}\n`));
  const block = section.match(/```sh\n([\s\S]*?)```\n/);
  assert.ok(block, `the README has a sh block under "${title}"`);
  return block[1];
}

/** Runs a script with bash in the checkout's root; answers code, stdout and stderr. */
async function bash(script: string, env: Record<string, string> = {}) {
  const out = await new Deno.Command("bash", {
    args: ["-euo", "pipefail", "-c", script],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/**
 * `tegami` as the README's alias makes it, for a script (aliases do not expand there); with
 * `exec`, the program replaces the shell, so a signal to the shell reaches it.
 */
function tegamiFunction(exec = false): string {
  return `tegami() { ${exec ? "exec " : ""}"${Deno.execPath()}" run -A --config deno.json ` +
    `main.ts "$@"; }\n`;
}

// CI installs curl (.ci/run), so there a missing curl fails the test instead.
const curlMissing = (await bash("command -v curl").catch(() => ({ code: 1 }))).code !== 0 &&
  Deno.env.get("CI") !== "true";
if (curlMissing) console.warn("Skipping the README's curl lines: no curl on this machine.");

async function runExample(file: string, url: string) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${EXAMPLES}${file}`],
    env: { TEGAMI_URL: url },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

Deno.test("the README quickstart runs as written", async () => {
  await using server = await startTestServer({ realTime: true });
  const result = await runExample("quickstart.ts", server.url);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /sending to ada@example.com/);
  assert.match(result.stdout, /job 1: \{ sentAt: "[^"]+" \}\njob 2: \{ sentAt: "[^"]+" \}\n$/);
});

Deno.test("the README quickstart waits for its own two jobs, not for any done ones", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  // Two jobs another client already finished in the same queue.
  for (let i = 0; i < 2; i++) {
    const { id } = await client.enqueue("email", { to: `other-${i}@example.com` });
    const leased = await server.request("POST", "/v1/queues/email/leases", {});
    await server.request("POST", `/v1/jobs/${id}/ack`, { token: leased.body.jobs[0].lease.token });
  }
  const result = await runExample("quickstart.ts", server.url);
  assert.equal(result.code, 0, result.stderr);
  const ids = [...result.stdout.matchAll(/enqueued job (\d+)/g)].map((m) => Number(m[1]));
  assert.deepEqual(ids, [3, 4]);
  for (const id of ids) assert.equal((await client.get(id)).state, "done", result.stdout);
  // Run again: the keys answer the same two jobs, already done, and it ends at once.
  const again = await runExample("quickstart.ts", server.url);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /enqueued job 3 for ada@example.com\nenqueued job 4 for grace/);
});

Deno.test("the README's TypeScript quickstart is examples/quickstart.ts", async () => {
  const readme = await Deno.readTextFile(new URL("../../README.md", import.meta.url));
  const file = await Deno.readTextFile(`${EXAMPLES}quickstart.ts`);
  const block = readme.match(
    /This is \[`examples\/quickstart\.ts`\][\s\S]*?```ts\n([\s\S]*?)```\n/,
  );
  assert.ok(block, "the README shows the quickstart");
  // The file's first line says how to run it; the README says that in its own words.
  assert.equal(block[1], file.slice(file.indexOf("\n") + 1));
});

Deno.test({
  name: "the README's curl and shell lines run as written, one after the other",
  ignore: curlMissing,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const client = new TegamiClient({ url: server.url });

    // The curl lines: enqueue, lease, and ack with the id and token the lease answered.
    const curl = await readmeShell("A first job, with curl");
    assert.match(curl, /# → \{"id":1,"state":"done"\}\n$/);
    const curled = await bash(curl.replaceAll(README_URL, server.url));
    assert.equal(curled.code, 0, curled.stderr);
    assert.match(curled.stdout, /\{"id":1,"state":"done"\}$/);

    // The shell lines, with `tegami` the program in this checkout; consume runs until stopped.
    const lines = (await readmeShell("From the shell")).split("\n");
    assert.match(lines[0], /^alias tegami=/);
    const consume = lines.find((line) => line.startsWith("tegami consume "));
    assert.ok(consume);
    const rest = lines.slice(1).filter((line) => line !== consume).join("\n");
    const env = { TEGAMI_URL: server.url };
    const shell = await bash(tegamiFunction() + rest, env);
    assert.equal(shell.code, 0, shell.stderr);
    assert.match(shell.stdout, /\nenqueued 3 jobs to email \(3 new, 0 deduplicated\)/);
    assert.match(shell.stdout, /\(no dead jobs in email\)\nrequeued 0 jobs\n/);
    assert.match(shell.stdout, /\n {2}rate +100\/1s\n/);

    // SIGTERM stops the worker as Ctrl-C would.
    const worker = new Deno.Command("bash", {
      args: ["-c", tegamiFunction(true) + consume],
      cwd: ROOT,
      env,
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const deadline = Date.now() + 20_000;
    while ((await client.stats("email")).counts.done < 5) {
      assert.ok(Date.now() < deadline, "the README's worker finished the four jobs in time");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    worker.kill("SIGTERM");
    const stopped = await worker.output();
    assert.equal(stopped.code, 0, new TextDecoder().decode(stopped.stderr));
    const { id } = await client.enqueue("email", { to: "ada@example.com" }, {
      key: "welcome-ada",
    });
    assert.deepEqual((await client.get(id)).result, { sent: true, job: id, attempt: 1 });
  },
});

Deno.test("the README's example files are there and the worker is executable", async () => {
  const worker = await Deno.stat(`${EXAMPLES}send_mail.sh`);
  assert.ok(worker.mode !== null && (worker.mode & 0o111) !== 0, "send_mail.sh is executable");
  const lines = (await Deno.readTextFile(`${EXAMPLES}jobs.ndjson`)).trimEnd().split("\n");
  assert.deepEqual(lines.map((line) => Object.keys(JSON.parse(line))), [["to"], ["to"], ["to"]]);
});

Deno.test("the producer example enqueues with its options and shows a refusal", async () => {
  await using server = await startTestServer({ realTime: true });
  const result = await runExample("producer.ts", server.url);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /refused: validation_failed/);
  const stats = await new TegamiClient({ url: server.url }).stats("charges");
  assert.equal(stats.counts.pending + stats.counts.delayed, 3);
});

Deno.test("the checkpoint worker calls the external service once per job across a crash", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const service = new FakePaymentService();
  const ids = [];
  for (let i = 0; i < 5; i++) {
    ids.push(
      (await client.enqueue("payments", { invoice: `INV-${i}`, cents: i }, {
        backoff: { baseMs: 10, maxMs: 20 },
      })).id,
    );
  }
  const worker = startWorker(server.url, service, true);
  const deadline = Date.now() + 10_000;
  for (const id of ids) {
    while ((await client.get(id)).state !== "done") {
      assert.ok(Date.now() < deadline, `job ${id} finished in time`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  await worker.close();
  assert.equal(service.calls, 5, "one external call per job, the crashed one included");
  const results = await Promise.all(ids.map(async (id) => (await client.get(id)).result));
  assert.equal(results.filter((r) => (r as { reconciled?: boolean }).reconciled).length, 1);
});
