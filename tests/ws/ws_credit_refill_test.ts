import assert from "node:assert/strict";
import { startTestServer } from "../helpers/test_server.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";

Deno.test("an ack's freed credit is refilled in the same commit as the ack", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  await ws.subscribe("r", 1);
  for (let i = 0; i < 3; i++) {
    await server.request("POST", "/v1/queues/r/jobs", { payload: i });
  }
  const first = await ws.nextJob();
  const before = server.server.store.commitStats().commits;
  const reply = await ws.request({ op: "ack", id: first.id, token: first.lease.token });
  assert.equal(reply.op, "ok");
  const second = await ws.nextJob();
  assert.equal(second.payload, 1);
  assert.equal(server.server.store.commitStats().commits - before, 1, "ack and claim: one commit");
  // Prefetch 1 is still honoured: nothing more until this one is settled.
  assert.deepEqual(await ws.quietFor(100, (f) => f.op === "job"), []);
  await ws.request({ op: "nack", id: second.id, token: second.lease.token, delay_ms: 60_000 });
  assert.equal((await ws.nextJob()).payload, 2);
});
