import assert from "node:assert/strict";
import { startTestServer } from "../helpers/test_server.ts";

Deno.test("a job can be enqueued, leased and acked over HTTP", async () => {
  await using server = await startTestServer();
  const enq = await server.request("POST", "/v1/queues/mail/jobs", { payload: { to: "a@b" } });
  assert.equal(enq.status, 201);
  const lease = await server.request("POST", "/v1/queues/mail/leases", { max: 1 });
  assert.equal(lease.body.jobs.length, 1);
  const [job] = lease.body.jobs;
  const ack = await server.request("POST", `/v1/jobs/${job.id}/ack`, {
    token: job.lease.token,
    result: { ok: true },
  });
  assert.deepEqual(ack.body, { id: job.id, state: "done" });
  await server.advance(31_000);
  const got = await server.request("GET", `/v1/jobs/${job.id}`);
  assert.equal(got.body.state, "done");
  assert.deepEqual(got.body.result, { ok: true });
});
