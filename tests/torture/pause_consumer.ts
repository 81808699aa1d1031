/**
 * A consumer in its own process, for the process-pause test: it subscribes, takes one job,
 * unsubscribes (so a redelivery goes elsewhere), prints `job ID TOKEN ATTEMPT EXPIRES_AT`, then
 * waits for a line on stdin before acking with the token it got, and prints `ack ok` or
 * `ack CODE`. The test SIGSTOPs it between the two, past the lease.
 *
 * Usage: deno run -A tests/torture/pause_consumer.ts WS_URL QUEUE LEASE_MS
 *
 * @module
 */

const [url, queue, leaseMs] = Deno.args;
const socket = new WebSocket(url);
const print = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));

socket.onopen = () => {
  socket.send(JSON.stringify({
    op: "subscribe",
    ref: "subscribe",
    queue,
    prefetch: 1,
    lease_ms: Number(leaseMs),
  }));
};

socket.onmessage = async (event) => {
  const frame = JSON.parse(String(event.data));
  if (frame.op === "job") {
    socket.send(JSON.stringify({ op: "unsubscribe", ref: "unsubscribe", queue }));
    print(`job ${frame.id} ${frame.lease.token} ${frame.attempt} ${frame.lease.expires_at}`);
    // Wait for the go-ahead; the test stops this process before it can come.
    const reader = Deno.stdin.readable.getReader();
    await reader.read();
    reader.releaseLock();
    socket.send(JSON.stringify({ op: "ack", ref: "ack", id: frame.id, token: frame.lease.token }));
  } else if (frame.ref === "ack") {
    print(frame.op === "ok" ? "ack ok" : `ack ${frame.code}`);
    socket.close();
  }
};

socket.onclose = () => Deno.exit(0);
