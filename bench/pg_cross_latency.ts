/**
 * Cross-server push latency on PostgreSQL: two `tegami serve` processes on one database (a
 * fresh schema), a WebSocket consumer on the second, one job at a time enqueued through the
 * first; the time from sending the POST to receiving the `job` frame, idle otherwise.
 *
 * `deno run -A bench/pg_cross_latency.ts [--url postgres://…] [--samples N]`
 *
 * @module
 */

import { parseArgs } from "node:util";
import { spawnServer } from "../tests/helpers/process_server.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    url: { type: "string", default: "postgres://postgres@127.0.0.1:5432/postgres" },
    samples: { type: "string", default: "500" },
  },
});
const schema = `bench_${crypto.randomUUID().slice(0, 8)}`;
const args = ["--db", values.url, "--pg-schema", schema];
await using a = await spawnServer(args);
await using b = await spawnServer(args);
const socket = new WebSocket(b.url.replace(/^http/, "ws") + "/v1/ws");
await new Promise((resolve) => socket.addEventListener("open", resolve, { once: true }));
let waiting: ((frame: { op: string; id: number; lease: { token: string } }) => void) | null = null;
socket.addEventListener("message", (event) => {
  const frame = JSON.parse(event.data);
  if (frame.op === "job") waiting?.(frame);
});
socket.send(JSON.stringify({ op: "subscribe", queue: "lat", prefetch: 1 }));
await new Promise((resolve) => setTimeout(resolve, 500));
const times: number[] = [];
for (let i = 0; i < Number(values.samples); i++) {
  const got = new Promise<{ id: number; lease: { token: string } }>((r) => waiting = r);
  const started = performance.now();
  await fetch(`${a.url}/v1/queues/lat/jobs`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ payload: i }),
  }).then((r) => r.text());
  const job = await got;
  times.push(performance.now() - started);
  socket.send(JSON.stringify({ op: "ack", id: job.id, token: job.lease.token }));
  await new Promise((resolve) => setTimeout(resolve, 5));
}
socket.close();
times.sort((x, y) => x - y);
const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
console.log(
  `cross-server enqueue→push over ${times.length} samples: p50 ${at(0.5).toFixed(2)} ms, ` +
    `p99 ${at(0.99).toFixed(2)} ms, max ${times[times.length - 1].toFixed(2)} ms`,
);
