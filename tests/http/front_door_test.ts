/**
 * The front door (lib/http/front_door.ts): every connection counted and timed, the limit
 * answered with 503, a descriptor shortage never fatal. Real sockets throughout; the slowloris
 * and shutdown cases run a real server process with its descriptor limit lowered.
 */

import assert from "node:assert/strict";
import net from "node:net";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";
import { spawnServer } from "../helpers/process_server.ts";
import { readToClose } from "../helpers/raw_http.ts";
import { RawWs } from "../helpers/raw_ws.ts";
import { newJob } from "../helpers/new_job.ts";
import { wsUrl } from "../helpers/ws_client.ts";

/** A raw TCP connection to a server. */
async function connect(url: string): Promise<Deno.TcpConn> {
  const { hostname, port } = new URL(url);
  return await Deno.connect({ hostname, port: Number(port) });
}

const encoder = new TextEncoder();

/** A healthy request on its own connection; answers status and round-trip time. */
async function healthy(url: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const response = await fetch(`${url}/healthz`, { headers: { connection: "close" } });
  await response.body?.cancel();
  return { status: response.status, ms: performance.now() - started };
}

async function server(config: Record<string, unknown>): Promise<TestServer> {
  return await startTestServer({ realTime: true, config });
}

Deno.test("a request head not complete at --header-timeout is answered 408 and closed", async () => {
  await using s = await server({ headerTimeoutMs: 400 });
  const conn = await connect(s.url);
  await conn.write(encoder.encode("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
  const { text, ms } = await readToClose(conn);
  assert.match(text, /^HTTP\/1\.1 408 /, "the half-sent request is answered 408");
  assert.match(text, /"code":"request_timeout"/);
  assert.ok(ms >= 350 && ms < 2000, `closed after ${ms.toFixed(0)} ms`);
  assert.equal((await healthy(s.url)).status, 200);
});

Deno.test("a connection that sends nothing at all is closed at --header-timeout, unanswered", async () => {
  await using s = await server({ headerTimeoutMs: 400 });
  const conn = await connect(s.url);
  const { text, ms } = await readToClose(conn);
  assert.equal(text, "", "nobody is waiting for an answer");
  assert.ok(ms >= 350 && ms < 2000, `closed after ${ms.toFixed(0)} ms`);
});

Deno.test("a kept-alive connection is closed --idle-timeout after its last answer", async () => {
  await using s = await server({ idleTimeoutMs: 500, headerTimeoutMs: 5000 });
  const conn = await connect(s.url);
  await conn.write(encoder.encode("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  const { text, ms } = await readToClose(conn);
  assert.match(text, /^HTTP\/1\.1 200 /);
  assert.ok(ms >= 450 && ms < 2500, `closed ${ms.toFixed(0)} ms after the request`);
});

Deno.test("a relayed connection idle after its answer is closed at --idle-timeout without a 408", async () => {
  await using s = await server({ idleTimeoutMs: 500, headerTimeoutMs: 5000 });
  const conn = await connect(s.url);
  // A chunked body sends the connection through the relay.
  const body = JSON.stringify({ payload: 1 });
  await conn.write(encoder.encode(
    "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
      `Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
  ));
  const { text, ms } = await readToClose(conn, 4000);
  assert.match(text, /^HTTP\/1\.1 201 /);
  assert.doesNotMatch(text, /408/, "no answer to a request nobody began");
  assert.ok(ms < 3000, `closed ${ms.toFixed(0)} ms after the request`);
});

Deno.test("a relayed client that never reads is closed soon after --idle-timeout, its 408 unwritten", async () => {
  await using s = await server({ idleTimeoutMs: 300, headerTimeoutMs: 5000 });
  const conn = await connect(s.url);
  // HTTP/1.0 goes through the relay; 64 KiB answers asked for 400 times and never read.
  await conn.write(encoder.encode(
    "GET /dashboard.js HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n".repeat(400),
  ));
  const open = async () => {
    const metrics = await (await fetch(`${s.url}/metrics`, { headers: { connection: "close" } }))
      .text();
    return Number(metrics.match(/^tegami_connections (\d+)$/m)?.[1]);
  };
  const started = performance.now();
  let count = await open();
  while (count > 1 && performance.now() - started < 6000) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    count = await open();
  }
  assert.equal(count, 1, "only the metrics request's own connection is left");
  assert.ok(performance.now() - started < 6000);
  conn.close();
});

Deno.test("a client that sends requests and never reads the answers is cut after --idle-timeout", async () => {
  await using s = await server({ idleTimeoutMs: 300, headerTimeoutMs: 5000 });
  const conn = await connect(s.url);
  // 64 KiB answers, asked for 400 times over (25 MiB), and nothing read: the socket's buffers
  // fill and the answer being written stalls.
  const ask = encoder.encode("GET /dashboard.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".repeat(400));
  await conn.write(ask);
  const started = performance.now();
  let cut = false;
  while (!cut && performance.now() - started < 10_000) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    cut = /tegami_connection_events_total\{event="timed_out_write"\} 1/.test(metrics);
  }
  assert.ok(cut, "the stalled answer was never cut");
  // The server let the connection go: reading what it had sent ends at its close.
  const { text } = await readToClose(conn);
  assert.match(text, /^HTTP\/1\.1 200 /);
  assert.ok(text.length < ask.length * 200, "it stopped writing");
});

Deno.test("a request that keeps its connection busy is never cut by --idle-timeout", async () => {
  await using s = await server({ idleTimeoutMs: 200, headerTimeoutMs: 200 });
  const started = performance.now();
  const answer = await s.request("POST", "/v1/queues/q/leases", { wait_ms: 700 });
  assert.equal(answer.status, 200);
  assert.ok(performance.now() - started >= 650, "the long-poll ran its full wait");
});

Deno.test("a body that does not arrive within --body-timeout answers 408 request_timeout", async () => {
  await using s = await server({ bodyTimeoutMs: 500 });
  const conn = await connect(s.url);
  await conn.write(encoder.encode(
    "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
      'Content-Length: 100\r\n\r\n{"payload":',
  ));
  const { text, ms } = await readToClose(conn);
  assert.match(text, /^HTTP\/1\.1 408 /);
  assert.match(text, /"code":"request_timeout"/);
  assert.match(text, /connection: close/i);
  assert.ok(ms >= 450 && ms < 2500, `answered after ${ms.toFixed(0)} ms`);
  const stats = await s.request("GET", "/v1/queues/q");
  assert.equal((stats.body as { counts: { pending: number } }).counts.pending, 0);
});

Deno.test("past --max-connections a new connection gets 503 unavailable with Retry-After", async () => {
  await using s = await server({ maxConnections: 3 });
  // Three long-polls hold every slot; none of them is idle, so none can be evicted.
  const polls = [1, 2, 3].map(() => s.request("POST", "/v1/queues/q/leases", { wait_ms: 1500 }));
  await new Promise((resolve) => setTimeout(resolve, 300));
  const conn = await connect(s.url);
  await conn.write(encoder.encode("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  const { text } = await readToClose(conn);
  assert.match(text, /^HTTP\/1\.1 503 /);
  assert.match(text, /retry-after: 1/i);
  assert.match(text, /"code":"unavailable"/);
  for (const poll of polls) assert.equal((await poll).status, 200);
  assert.equal((await healthy(s.url)).status, 200, "served again once a slot is free");
});

Deno.test("at --max-connections an idle connection makes room for a new one", async () => {
  await using s = await server({ maxConnections: 2, headerTimeoutMs: 60_000 });
  const idle = [await connect(s.url), await connect(s.url)];
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal((await healthy(s.url)).status, 200);
  const closed = await Promise.all(idle.map((c) => readToClose(c, 2000)));
  assert.ok(closed.some((c) => c.ms < 1900), "the oldest idle connection was closed");
  for (const c of idle) {
    try {
      c.close();
    } catch { /* closed */ }
  }
});

Deno.test({
  name: "at --max-connections a flood from one address closes its own connections, not another's",
  // node:net's sockets, used for their source address, keep runtime resources past close.
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using s = await server({ maxConnections: 4, headerTimeoutMs: 60_000 });
    const { hostname, port } = new URL(s.url);
    const open = (localAddress: string) =>
      new Promise<net.Socket>((resolve, reject) => {
        const socket = net.connect({ host: hostname, port: Number(port), localAddress }, () => {
          socket.off("error", reject);
          resolve(socket);
        });
        socket.once("error", reject);
      });
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    // A client about to send its request (or a browser its auth frame): idle longest of all.
    const client = await open("127.0.0.2");
    let clientClosed = false;
    client.on("close", () => clientClosed = true);
    const answer = new Promise<string>((resolve) => {
      let text = "";
      client.on("data", (chunk: Uint8Array) => text += new TextDecoder().decode(chunk));
      client.on("close", () => resolve(text));
    });
    await pause(50);
    // Twice the limit of connections that send nothing, from another address.
    const flood: net.Socket[] = [];
    let floodClosed = 0;
    for (let i = 0; i < 8; i++) {
      const socket = await open("127.0.0.3");
      socket.on("error", () => {});
      socket.once("end", () => floodClosed++);
      socket.resume();
      flood.push(socket);
      await pause(10);
    }
    await pause(100);
    assert.equal(clientClosed, false, "the other address's connection is still open");
    assert.ok(floodClosed >= 4, `the flood's own made room (${floodClosed} closed)`);
    client.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    assert.match(await answer, /^HTTP\/1\.1 200 /, "and its request is answered");
    for (const socket of flood) socket.destroy();
  },
});

Deno.test("at --max-connections a WebSocket that has not authenticated makes room for a token holder", async () => {
  const token = "admin-token-0123456789abcdef";
  await using s = await startTestServer({
    realTime: true,
    config: { maxConnections: 3 },
    tokens: [{ name: "ops", token, scopes: ["admin"] }],
  });
  // Three sockets that never send their token hold every slot (each would be closed at 10 s).
  const waiting = [
    await RawWs.connect(wsUrl(s.url)),
    await RawWs.connect(wsUrl(s.url)),
    await RawWs.connect(wsUrl(s.url)),
  ];
  const answer = await fetch(`${s.url}/v1/queues`, {
    headers: { authorization: `Bearer ${token}`, connection: "close" },
  });
  await answer.body?.cancel();
  assert.equal(answer.status, 200, "served, not 503");
  const ends = await Promise.all(
    waiting.map((ws) => ws.closed(1000).then(({ code }) => `closed ${code}`, () => "open")),
  );
  assert.deepEqual(
    ends.sort(),
    ["closed 1013", "open", "open"],
    "the oldest one made room, told why with a close frame (1013: try again later)",
  );
  for (const ws of waiting) await ws[Symbol.asyncDispose]();
});

Deno.test({
  name: "slowloris at ulimit -n 1024: the server stays up and answers healthy requests",
  sanitizeResources: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "tegami-slowloris-" });
    await using proc = await spawnServer(["--db", `${dir}/t.db`], { nofile: 1024 });
    const { hostname, port } = new URL(proc.url);
    const held: Deno.Conn[] = [];
    const latencies: number[] = [];
    try {
      // 1,500 half-sent requests: more than the descriptors could ever hold (3 per connection).
      for (let i = 0; i < 1500; i++) {
        const conn = await Deno.connect({ hostname, port: Number(port) });
        await conn.write(encoder.encode("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: "))
          .catch(() => {});
        held.push(conn);
        if (i % 100 === 99) latencies.push((await healthy(proc.url)).ms);
      }
      for (let i = 0; i < 20; i++) {
        const answer = await healthy(proc.url);
        assert.equal(answer.status, 200);
        latencies.push(answer.ms);
      }
      latencies.sort((a, b) => a - b);
      const p99 = latencies[Math.floor(latencies.length * 0.99)];
      console.log(
        `slowloris x1500 at ulimit 1024: healthy p50 ${
          latencies[latencies.length >> 1].toFixed(1)
        } ms, max ${p99.toFixed(1)} ms over ${latencies.length} requests`,
      );
      assert.ok(p99 < 1000, `healthy requests answered within a second (${p99.toFixed(0)} ms)`);
      const metrics = await (await fetch(`${proc.url}/metrics`)).text();
      assert.match(metrics, /tegami_connection_events_total\{event="evicted_idle"\} [1-9]/);
    } finally {
      for (const conn of held) {
        try {
          conn.close();
        } catch { /* closed by the server */ }
      }
    }
    proc.kill("SIGTERM");
    const { code, stderr } = await proc.exited();
    assert.equal(code, 0, stderr);
    assert.doesNotMatch(stderr, /Uncaught|Too many open files \(os error 24\)\n.*panicked/);
    await Deno.remove(dir, { recursive: true });
  },
});

Deno.test({
  name: "SIGTERM with an uploader stuck mid-body exits 0 within --shutdown-grace",
  sanitizeResources: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "tegami-grace-" });
    await using proc = await spawnServer([
      "--db",
      `${dir}/t.db`,
      "--shutdown-grace",
      "1s",
      "--body-timeout",
      "1h",
    ]);
    const acked = await fetch(`${proc.url}/v1/queues/q/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"payload":"kept"}',
    });
    assert.equal(acked.status, 201);
    const { id } = await acked.json();
    const { hostname, port } = new URL(proc.url);
    const stuck = await Deno.connect({ hostname, port: Number(port) });
    await stuck.write(encoder.encode(
      "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{",
    ));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = performance.now();
    proc.kill("SIGTERM");
    const { code, stderr } = await proc.exited();
    const ms = performance.now() - started;
    stuck.close();
    assert.equal(code, 0, stderr);
    assert.ok(ms < 3000, `exited ${ms.toFixed(0)} ms after SIGTERM (grace 1 s)`);
    console.log(`shutdown with a stuck uploader: exit 0 after ${ms.toFixed(0)} ms (grace 1000 ms)`);
    await using again = await spawnServer(["--db", `${dir}/t.db`]);
    const job = await (await fetch(`${again.url}/v1/jobs/${id}`)).json();
    assert.equal(job.payload, "kept", "the acknowledged job survived the cut");
    again.kill("SIGTERM");
    await again.exited();
    await Deno.remove(dir, { recursive: true });
  },
});

Deno.test({
  name: "running out of descriptors (EMFILE) is never fatal: the server backs off, learns, serves",
  sanitizeResources: false,
  fn: async () => {
    // With the start task's permissions the descriptor limit cannot be read, so nothing sizes the
    // connection limit below it: 1,500 connections at ulimit -n 1024 must meet EMFILE. They send
    // half a request head and are held: the healthy requests are served once the server has cut
    // them at --header-timeout, so it is short here, yet far longer than opening them takes.
    const dir = await Deno.makeTempDir({ prefix: "tegami-emfile-" });
    await using proc = await spawnServer(["--db", `${dir}/t.db`, "--header-timeout", "3s"], {
      nofile: 1024,
      permissions: ["--allow-net", "--allow-read", "--allow-write", "--allow-env", "--allow-sys"],
    });
    const { hostname, port } = new URL(proc.url);
    const held: Deno.Conn[] = [];
    try {
      for (let i = 0; i < 1500; i++) {
        const conn = await Deno.connect({ hostname, port: Number(port) });
        await conn.write(encoder.encode("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"))
          .catch(() => {});
        held.push(conn);
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      const answers: number[] = [];
      for (let i = 0; i < 10; i++) answers.push((await healthy(proc.url)).status);
      assert.deepEqual(answers, Array(10).fill(200), "healthy requests answered after EMFILE");
    } finally {
      for (const conn of held) {
        try {
          conn.close();
        } catch { /* closed by the server */ }
      }
    }
    proc.kill("SIGTERM");
    const { code, stderr } = await proc.exited();
    assert.equal(code, 0, stderr);
    assert.match(stderr, /out of file descriptors/, "the shortage was met and logged");
    assert.doesNotMatch(stderr, /Uncaught/);
    console.log(
      `EMFILE at ulimit -n 1024: ${
        (stderr.match(/Connection limit lowered[^\n]*/) ?? ["no limit learned"])[0]
      }`,
    );
    await Deno.remove(dir, { recursive: true });
  },
});

Deno.test("an event-stream reader that stops reading is cut after --idle-timeout", async () => {
  // The event stream's answer never completes, so only a write deadline can end a connection
  // whose client takes nothing: without one, its socket, the relay's and their buffers stay as
  // long as the client stays connected.
  await using s = await startTestServer({
    config: { idleTimeoutMs: 300, headerTimeoutMs: 5000, metricsQueues: 100_000, sync: "normal" },
  });
  // 2,000 queues make each snapshot about a megabyte: a few fill the sockets' buffers.
  await Promise.all(
    Array.from(
      { length: 2000 },
      (_, i) => s.server.broker.enqueue(`queue-${i}`, [newJob("1", s.clock.now())]),
    ),
  );
  const conn = await connect(s.url);
  await conn.write(encoder.encode("GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  const cut = async () =>
    /tegami_connection_events_total\{event="timed_out_write"\} 1/.test(
      await (await fetch(`${s.url}/metrics`)).text(),
    );
  let ticks = 0;
  // Fewer snapshots than the event stream's own drop of an idle reader takes.
  while (!(await cut()) && ++ticks < 20) {
    await s.advance(1000); // a snapshot
    await new Promise((resolve) => setTimeout(resolve, 400)); // its write stalls past 300 ms
  }
  assert.ok(ticks < 20, "the stalled event stream was never cut");
  const { text } = await readToClose(conn, 10_000);
  assert.match(text, /^HTTP\/1\.1 200 /);
});
