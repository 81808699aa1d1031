import assert from "node:assert/strict";
import { TegamiClient } from "../../lib/client/mod.ts";
import { FakePaymentService, startWorker } from "../../examples/checkpoint_worker.ts";
import { startTestServer } from "../helpers/test_server.ts";

const EXAMPLES = new URL("../../examples/", import.meta.url).pathname;

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
