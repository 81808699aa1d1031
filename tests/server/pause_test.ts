/**
 * Process pauses (SIGSTOP/SIGCONT), the failure a GC pause or a stalled VM looks like: a
 * consumer frozen past its lease must not be able to complete the job it lost, and a server
 * frozen under load must come back losing nothing.
 */

import assert from "node:assert/strict";
import { spawnServer } from "../helpers/process_server.ts";
import { send } from "../helpers/test_server.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";
import { runCampaign } from "../torture/campaign.ts";
import { formatReport } from "../torture/checker.ts";
import { tempDir } from "../helpers/temp_dir.ts";

const CONSUMER = new URL("../torture/pause_consumer.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

/** Reads lines from a child's stdout. */
function lines(stream: ReadableStream<Uint8Array>): () => Promise<string> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  return async () => {
    for (;;) {
      const at = buffer.indexOf("\n");
      if (at >= 0) {
        const line = buffer.slice(0, at);
        buffer = buffer.slice(at + 1);
        return line;
      }
      const { done, value } = await reader.read();
      if (done) throw new Error(`stdout ended; last text: ${buffer}`);
      buffer += value;
    }
  };
}

Deno.test("a consumer SIGSTOPped past its lease gets lease_lost for its late ack, and the job went to another", async () => {
  await using tmp = await tempDir("tegami-pause-");
  const dir = tmp.path;
  await using server = await spawnServer(["--db", `${dir}/tegami.db`]);
  const enqueued = await send(server.url, "POST", "/v1/queues/p/jobs", { payload: "work" });
  assert.equal(enqueued.status, 201);
  const id = enqueued.body.id;

  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--config", CONFIG, "-A", CONSUMER, wsUrl(server.url), "p", "1000"],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const readLine = lines(child.stdout);
  const writer = child.stdin.getWriter();
  try {
    const [word, jobId, token, attempt, expiresAt] = (await readLine()).split(" ");
    assert.deepEqual([word, Number(jobId), attempt], ["job", id, "1"]);
    child.kill("SIGSTOP");
    // The go-ahead waits in the pipe: the frozen consumer cannot read it until SIGCONT.
    await writer.write(new TextEncoder().encode("ack\n"));

    // Meanwhile the lease runs out and the job goes to a live consumer.
    await using other = await WsClient.connect(wsUrl(server.url));
    await other.subscribe("p", 1, { lease_ms: 10_000 });
    const again = await other.nextJob("p", 5000);
    assert.equal(again.id, id);
    assert.equal(again.attempt, 2);
    assert.notEqual(again.lease.token, token);
    assert.ok(Date.now() >= Number(expiresAt), "redelivered only once the first lease ran out");

    child.kill("SIGCONT");
    assert.equal(await readLine(), "ack lease_lost");
    assert.equal((await child.status).code, 0);

    const ack = await other.ok({ op: "ack", id, token: again.lease.token });
    assert.equal(ack.state, "done");
    const job = await send(server.url, "GET", `/v1/jobs/${id}`);
    assert.equal(job.body.state, "done");
    assert.equal(job.body.attempts, 2);
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
    await writer.close().catch(() => {});
    await child.status;
  }
});

Deno.test({
  name: "a server SIGSTOPped under load for longer than its leases comes back losing nothing",
  sanitizeResources: false, // fetch keeps pooled connections
  fn: async () => {
    const result = await runCampaign({
      cycles: 3,
      disruption: "pause",
      upMs: [300, 800],
      pauseMs: [500, 1500],
      leaseMs: [300, 800],
    });
    const f = result.report.figures;
    assert.ok(result.report.ok, formatReport(result.report));
    assert.ok(result.cleanExit);
    assert.equal(f.pauses, 3);
    assert.equal(f.kills, 0);
    assert.ok(f.jobs_acknowledged > 20, formatReport(result.report));
  },
});
