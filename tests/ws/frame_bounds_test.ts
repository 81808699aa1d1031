/**
 * The largest frame and answer a client must accept, as docs/protocol.md and docs/api.md state
 * them: a job at every limit at once (payload and checkpoint at `--max-payload`, a 512-byte key
 * and an 8192-character error that JSON escaping makes six times longer) still arrives in a `job`
 * frame within `largestDeliveryBytes`, and reads back within `largestJobBytes`.
 */

import assert from "node:assert/strict";
import {
  largestDeliveryBytes,
  largestJobBytes,
  MAX_ERROR_CHARS,
  MAX_KEY_BYTES,
} from "../../lib/core/limits.ts";
import { enqueue } from "../helpers/http_calls.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";

const encoder = new TextEncoder();

/** A JSON string value whose JSON text is exactly `bytes` long, of characters JSON escapes. */
function escapedString(bytes: number): string {
  // "\u0001" is 6 bytes as JSON; pad with plain letters to hit the size exactly.
  const escaped = Math.floor((bytes - 2) / 6);
  return "\u0001".repeat(escaped) + "a".repeat(bytes - 2 - escaped * 6);
}

Deno.test("a job at every limit fits the documented largest frame and answer", async () => {
  const maxPayload = 64 * 1024;
  await using server = await startTestServer({ config: { maxPayload } });
  await using ws = await WsClient.connect(wsUrl(server.url));
  const sizes: number[] = [];
  ws.socket.addEventListener("message", (event) => {
    sizes.push(encoder.encode(event.data as string).byteLength);
  });
  const payload = escapedString(maxPayload);
  assert.equal(encoder.encode(JSON.stringify(payload)).byteLength, maxPayload);
  const key = "\u0001".repeat(MAX_KEY_BYTES);
  const id = await enqueue(server, "big", { payload, key, max_attempts: 3 });

  await ws.subscribe("big", 1);
  let job = await ws.nextJob("big");
  await ws.ok({ op: "checkpoint", id, token: job.lease.token, data: escapedString(maxPayload) });
  const error = "\u0001".repeat(MAX_ERROR_CHARS + 100);
  await ws.ok({ op: "nack", id, token: job.lease.token, error, delay_ms: 0 });
  job = await ws.nextJob("big");
  assert.equal(job.attempt, 2);
  assert.ok(job.last_error.endsWith("…[cut]"));

  const largest = Math.max(...sizes);
  assert.ok(largest > 2 * maxPayload, `the job frame carries both values: ${largest} bytes`);
  assert.ok(
    largest <= largestDeliveryBytes(maxPayload),
    `${largest} bytes is over the documented ${largestDeliveryBytes(maxPayload)}`,
  );

  await ws.ok({ op: "ack", id, token: job.lease.token, result: escapedString(maxPayload) });
  const response = await fetch(`${server.url}/v1/jobs/${id}`);
  const bytes = (await response.bytes()).byteLength;
  assert.ok(bytes > 3 * maxPayload, `the job carries all three values: ${bytes} bytes`);
  assert.ok(bytes <= largestJobBytes(maxPayload), `${bytes} bytes is over the documented bound`);
});
