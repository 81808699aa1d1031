/**
 * A queue's `dead_letter_queue` over tegami's API: a job that would die moves there, pending, and
 * a consumer of that queue gets it at once; a queue cannot be its own.
 */

import assert from "node:assert/strict";
import { startTestServer } from "../helpers/test_server.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";

Deno.test("a job nacked dead in a queue with a dead_letter_queue is pushed to that queue's consumer", async () => {
  await using server = await startTestServer();
  const put = await server.request("PUT", "/v1/queues/mail/settings", {
    dead_letter_queue: "mail.dead",
  });
  assert.equal(put.status, 200);
  assert.equal(put.body.dead_letter_queue, "mail.dead");
  await using ws = await WsClient.connect(wsUrl(server.url));
  await ws.subscribe("mail.dead", 1);
  const made = await server.request("POST", "/v1/queues/mail/jobs", {
    payload: { to: "a@b.example" },
    key: "welcome-a",
  });
  const [job] = (await server.request("POST", "/v1/queues/mail/leases", {})).body.jobs;
  const nack = await server.request("POST", `/v1/jobs/${made.body.id}/nack`, {
    token: job.lease.token,
    error: "mailbox does not exist",
    dead: true,
  });
  assert.equal(nack.status, 200);
  assert.equal(nack.body.state, "pending", "it waits in the dead-letter queue");
  const pushed = await ws.nextJob("mail.dead");
  assert.equal(pushed.id, made.body.id);
  assert.equal(pushed.queue, "mail.dead");
  assert.equal(pushed.dead_lettered_from, "mail");
  assert.equal(pushed.attempt, 1);
  assert.equal(pushed.last_error, "mailbox does not exist");
  const stats = await server.request("GET", "/v1/queues/mail");
  assert.equal(stats.body.counts.dead, 0);
});

Deno.test("PUT /v1/queues/{queue}/settings refuses a queue as its own dead_letter_queue", async () => {
  await using server = await startTestServer();
  const self = await server.request("PUT", "/v1/queues/mail/settings", {
    dead_letter_queue: "mail",
  });
  assert.equal(self.status, 400);
  assert.match(self.body.error.message, /"dead_letter_queue": a queue cannot be its own/);
  const bad = await server.request("PUT", "/v1/queues/mail/settings", {
    dead_letter_queue: "not a queue",
  });
  assert.equal(bad.status, 400);
  assert.match(bad.body.error.message, /"dead_letter_queue": expected a queue name or null/);
});
