/**
 * fsync ordering, seen from the kernel's side (DESIGN §1 "any 2xx or ok means the change is
 * committed"): the server runs under `strace -f`, mutating calls are made one at a time
 * (HTTP on a fresh connection each, WebSocket frames on one socket), and the trace must show,
 * for every mutating 2xx answer and every `ok` reply, this order:
 *
 *   the request read from its socket → a write to the `-wal` file → an fsync or fdatasync of the
 *   `-wal` file that *returns* → the answer written to the same socket.
 *
 * Under the default settings every answer passes. With `--sync normal` (the control) none does:
 * the checker is able to fail, and does when the server answers before the WAL is durable.
 *
 * strace's `-y` prints each descriptor's path (`7</tmp/x/t.db-wal>`, `12<socket:[4711]>`), so no
 * descriptor bookkeeping is needed; a syscall split across threads (`<unfinished …>` …
 * `<… resumed>`) starts at its first line and ends at its second. Lines are in the order strace
 * saw the events, and a thread stopped at a syscall cannot run on until strace has printed it,
 * so an answer caused by a finished fsync always comes after the fsync's line.
 *
 * Skipped, with the reason printed, when strace is missing or ptrace is not permitted.
 */

import assert from "node:assert/strict";
import { programCommand } from "../../helpers/process_server.ts";
import { RawWs } from "../../helpers/raw_ws.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

/** Why the test cannot run here, or null. */
async function straceUnavailable(): Promise<string | null> {
  try {
    const out = await new Deno.Command("strace", {
      args: ["-f", "-o", "/dev/null", "true"],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (out.success) return null;
    return `strace cannot trace here (ptrace not permitted?): ${
      new TextDecoder().decode(out.stderr).trim().split("\n")[0]
    }`;
  } catch {
    return "strace is not installed (apt-get install strace)";
  }
}

const SKIP = await straceUnavailable();
if (SKIP !== null) console.log(`fsync_order_test.ts: skipped, ${SKIP}`);

const SYSCALLS = [
  "pwrite64",
  "pwritev",
  "write",
  "writev",
  "sendto",
  "sendmsg",
  "recvfrom",
  "recvmsg",
  "read",
  "fsync",
  "fdatasync",
];

/** A server running under strace. */
interface TracedServer extends AsyncDisposable {
  url: string;
  port: number;
  /** Stops the server (SIGTERM) and answers the trace. */
  stop(): Promise<string>;
}

async function startTraced(dir: string, extra: string[]): Promise<TracedServer> {
  const trace = `${dir}/trace.txt`;
  const { command, prefix } = programCommand();
  const child = new Deno.Command("strace", {
    args: [
      "-f",
      "--seccomp-bpf",
      "-y",
      "-s",
      "200",
      "-o",
      trace,
      "-e",
      `trace=${SYSCALLS.join(",")}`,
      command,
      ...prefix,
      "serve",
      "--port",
      "0",
      "--db",
      `${dir}/t.db`,
      ...extra,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const reader = child.stderr.getReader();
  let stderr = "";
  let url: string | null = null;
  const deadline = Date.now() + 30_000;
  while (url === null) {
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`The traced server did not start; stderr:\n${stderr}`);
    }
    const { done, value } = await reader.read();
    if (done) throw new Error(`The traced server exited; stderr:\n${stderr}`);
    stderr += new TextDecoder().decode(value);
    url = /url=(http:\/\/\S+)/.exec(stderr)?.[1] ?? null;
  }
  const drained = (async () => {
    for (;;) {
      const { done } = await reader.read();
      if (done) return;
    }
  })();
  let stopped: Promise<string> | null = null;
  // strace's first line is the server's own pid: signals go to it, not to strace (which would
  // detach and leave the server running). strace exits once the server has.
  const serverPid = Number(/^\d+/.exec(await Deno.readTextFile(trace))?.[0]);
  assert.ok(serverPid > 0, "the server's pid is in the trace");
  const stop = () =>
    stopped ??= (async () => {
      try {
        Deno.kill(serverPid, "SIGTERM");
      } catch {
        // already gone
      }
      const timer = setTimeout(() => {
        try {
          Deno.kill(serverPid, "SIGKILL");
        } catch {
          // already gone
        }
      }, 10_000);
      await child.status;
      clearTimeout(timer);
      await drained;
      return await Deno.readTextFile(trace);
    })();
  return {
    url,
    port: Number(new URL(url).port),
    stop,
    [Symbol.asyncDispose]: async () => {
      await stop();
    },
  };
}

/** One HTTP call on its own connection (its own socket in the trace); answers status, body. */
async function call(
  port: number,
  method: string,
  path: string,
  body?: unknown,
  // deno-lint-ignore no-explicit-any
): Promise<{ status: number; body: any }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const text = body === undefined ? "" : JSON.stringify(body);
    const head = `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n` +
      (body === undefined ? "" : "Content-Type: application/json\r\n") +
      `Content-Length: ${new TextEncoder().encode(text).length}\r\n\r\n`;
    await conn.write(new TextEncoder().encode(head + text));
    let answer = "";
    const buffer = new Uint8Array(16 * 1024);
    for (let n; (n = await conn.read(buffer)) !== null;) {
      answer += new TextDecoder().decode(buffer.subarray(0, n));
    }
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
    const bodyText = answer.slice(answer.indexOf("\r\n\r\n") + 4);
    return { status, body: bodyText === "" ? null : JSON.parse(bodyText) };
  } finally {
    try {
      conn.close();
    } catch {
      // closed by the server
    }
  }
}

/** Runs mutating calls one at a time; answers how many 2xx and ok answers to expect. */
async function workload(server: TracedServer): Promise<number> {
  const { port } = server;
  let mutating = 0;
  const expect = async (status: number, method: string, path: string, body?: unknown) => {
    const answer = await call(port, method, path, body);
    assert.equal(answer.status, status, `${method} ${path}: ${JSON.stringify(answer.body)}`);
    mutating++;
    return answer.body;
  };
  const a = (await expect(201, "POST", "/v1/queues/f/jobs", { payload: 1 })).id;
  const b = (await expect(201, "POST", "/v1/queues/f/jobs", { payload: 2, key: "k" })).id;
  await expect(201, "POST", "/v1/queues/f/jobs", { jobs: [{ payload: 3 }, { payload: 4 }] });
  const leased = (await expect(200, "POST", "/v1/queues/f/leases", { max: 3 })).jobs;
  assert.deepEqual(leased.slice(0, 2).map((j: { id: number }) => j.id), [a, b]);
  const [ja, jb, jc] = leased;
  await expect(200, "POST", `/v1/jobs/${ja.id}/checkpoint`, { token: ja.lease.token, data: 1 });
  await expect(200, "POST", `/v1/jobs/${ja.id}/extend`, { token: ja.lease.token });
  await expect(200, "POST", `/v1/jobs/${ja.id}/ack`, { token: ja.lease.token, result: "r" });
  await expect(200, "POST", `/v1/jobs/${jb.id}/nack`, { token: jb.lease.token, dead: true });
  await expect(200, "POST", "/v1/queues/f/dead/requeue", {});
  await expect(200, "POST", `/v1/jobs/${jc.id}/nack`, { token: jc.lease.token, delay_ms: 0 });
  await expect(200, "POST", "/v1/queues/f/pause");
  await expect(200, "POST", "/v1/queues/f/resume");
  await expect(200, "DELETE", `/v1/jobs/${jc.id}`);
  // Reads need no fsync; they are not counted.
  assert.equal((await call(port, "GET", `/v1/jobs/${a}`)).status, 200);

  // WebSocket: enqueue and ack, each reply awaited before the next frame.
  const ws = await RawWs.connect(server.url.replace(/^http/, "ws") + "/v1/ws");
  try {
    for (let i = 0; i < 3; i++) {
      await ws.send({ op: "enqueue", ref: i, queue: "w", payload: i });
      assert.equal((await ws.next((f) => f.ref === i)).op, "ok");
      mutating++;
    }
    const lease = await call(port, "POST", "/v1/queues/w/leases", { max: 1 });
    mutating++;
    const job = lease.body.jobs[0];
    await ws.send({ op: "ack", ref: "ack", id: job.id, token: job.lease.token });
    assert.equal((await ws.next((f) => f.ref === "ack")).op, "ok");
    mutating++;
    // A batch: one reply for an ack and two enqueues, written after their one fsync.
    const next = (await call(port, "POST", "/v1/queues/w/leases", { max: 1 })).body.jobs[0];
    mutating++;
    await ws.send({
      op: "batch",
      ref: "batch",
      frames: [
        { op: "ack", id: next.id, token: next.lease.token },
        { op: "enqueue", queue: "w", payload: "b1" },
        { op: "enqueue", queue: "w", payload: "b2" },
      ],
    });
    const replies = (await ws.next((f) => f.ref === "batch")).replies;
    assert.deepEqual(replies.map((r: { op: string }) => r.op), ["ok", "ok", "ok"]);
    mutating++;
  } finally {
    await ws[Symbol.asyncDispose]();
  }
  return mutating;
}

/** What the trace says about each mutating answer. */
interface Verdict {
  /** Answers found in the trace (2xx to a POST/DELETE, WebSocket ok). */
  answers: number;
  /** Of those, the ones written after a WAL write and a finished WAL fsync that followed the request. */
  durable: number;
  /** The others, with the lines that show it. */
  early: string[];
  /** fsync and fdatasync calls on the WAL in the whole trace. */
  walSyncs: number;
  /** Writes to the WAL in the whole trace. */
  walWrites: number;
}

/** Reads the trace and judges every mutating answer. */
function judge(trace: string): Verdict {
  type Sync = { start: number; end: number };
  const syncs: Sync[] = [];
  const walWrites: number[] = [];
  const reads = new Map<string, { line: number; text: string }[]>();
  const answers: { line: number; socket: string; text: string }[] = [];
  const open = new Map<string, { name: string; fd: string; start: number; text: string }>();
  const lines = trace.split("\n");
  const call =
    /^(\d+)\s+(?:(\w+)\((\d+)<([^>]*)>(.*?)(?:<unfinished \.\.\.>)?$|<\.\.\. (\w+) resumed>(.*)$)/;
  for (let i = 0; i < lines.length; i++) {
    const m = call.exec(lines[i]);
    if (m === null) continue;
    const pid = m[1];
    let name: string, path: string, rest: string, start: number;
    if (m[2] !== undefined) {
      name = m[2];
      path = m[4];
      rest = m[5];
      start = i;
      if (lines[i].endsWith("<unfinished ...>")) {
        open.set(pid, { name, fd: path, start: i, text: rest });
        // A write's direction is known at its start; record answers there.
        if (/^(write|writev|sendto|sendmsg)$/.test(name) && path.startsWith("socket:")) {
          answers.push({ line: i, socket: path, text: rest });
        }
        continue;
      }
    } else {
      const pending = open.get(pid);
      open.delete(pid);
      if (pending === undefined) continue;
      name = pending.name;
      path = pending.fd;
      rest = pending.text + m[7];
      start = pending.start;
      if (/^(write|writev|sendto|sendmsg)$/.test(name)) continue; // recorded at its start
    }
    const result = /=\s*(-?\d+)/.exec(rest.slice(rest.lastIndexOf(")")))?.[1];
    const ok = result !== undefined && Number(result) >= 0;
    if ((name === "fsync" || name === "fdatasync") && path.endsWith("-wal") && ok) {
      syncs.push({ start, end: i });
    } else if (/^pwrite/.test(name) && path.endsWith("-wal") && ok) {
      walWrites.push(i);
    } else if (
      /^(read|recvfrom|recvmsg)$/.test(name) && path.startsWith("socket:") && ok &&
      Number(result) > 0
    ) {
      const list = reads.get(path) ?? [];
      list.push({ line: start, text: rest });
      reads.set(path, list);
    } else if (/^(write|writev|sendto|sendmsg)$/.test(name) && path.startsWith("socket:")) {
      answers.push({ line: start, socket: path, text: rest });
    }
  }
  const verdict: Verdict = {
    answers: 0,
    durable: 0,
    early: [],
    walSyncs: syncs.length,
    walWrites: walWrites.length,
  };
  for (const answer of answers) {
    const httpOk = /"HTTP\/1\.1 2\d\d /.test(answer.text);
    const wsOk = /\\"op\\":\\"ok\\"/.test(answer.text);
    if (!httpOk && !wsOk) continue;
    const requests = (reads.get(answer.socket) ?? []).filter((r) => r.line < answer.line);
    const request = requests.at(-1);
    if (request === undefined) continue;
    // A GET is a read: it needs no fsync. (Frames are masked, so a WebSocket request cannot be
    // told apart by its text; every ok is counted, and every one in this workload is a write.)
    if (httpOk && /^,\s*"GET /.test(request.text)) continue;
    verdict.answers++;
    const covered = syncs.some((s) =>
      s.start > request.line && s.end < answer.line &&
      walWrites.some((w) => w > request.line && w < s.start)
    );
    if (covered) verdict.durable++;
    else {
      verdict.early.push(
        `request at line ${request.line + 1}: ${request.text.slice(0, 60)}\n` +
          `  answer at line ${answer.line + 1}: ${answer.text.slice(0, 60)}`,
      );
    }
  }
  return verdict;
}

Deno.test({
  name: "with the default --sync full, every mutating 2xx and ok is written after a WAL fsync",
  ignore: SKIP !== null,
  fn: async () => {
    await using tmp = await tempDir("tegami-fsync-order-");
    const dir = tmp.path;
    await using server = await startTraced(dir, []);
    const mutating = await workload(server);
    const verdict = judge(await server.stop());
    if (Deno.env.has("FSYNC_VERDICT")) console.log(JSON.stringify(verdict, null, 1));
    assert.equal(verdict.answers, mutating, "every mutating answer was found in the trace");
    assert.deepEqual(verdict.early, [], "answers written before their WAL fsync");
    assert.equal(verdict.durable, mutating);
    assert.ok(verdict.walSyncs >= mutating / 2, `only ${verdict.walSyncs} WAL fsyncs`);
  },
});

Deno.test({
  name: "with --sync normal (the control), mutating answers are written with no WAL fsync before",
  ignore: SKIP !== null,
  fn: async () => {
    await using tmp = await tempDir("tegami-fsync-order-");
    const dir = tmp.path;
    await using server = await startTraced(dir, ["--sync", "normal"]);
    const mutating = await workload(server);
    const verdict = judge(await server.stop());
    if (Deno.env.has("FSYNC_VERDICT")) console.log(JSON.stringify(verdict, null, 1));
    assert.equal(verdict.answers, mutating, "every mutating answer was found in the trace");
    // The WAL was written all along, but the same checker fails every answer: it can tell.
    assert.ok(verdict.walWrites >= mutating, `only ${verdict.walWrites} WAL writes`);
    assert.equal(verdict.durable, 0, "an answer followed a WAL fsync under --sync normal");
    assert.equal(verdict.early.length, mutating);
  },
});
