/**
 * What a hostile client can make the server's own WebSocket hold: a ping flood from a client
 * that never reads leaves one pong waiting, not one per ping; a message of endless empty
 * fragments holds no memory per fragment; and large messages being received are held against
 * the memory budget shared with request bodies, a socket that would pass it being closed with
 * 1013. Driven through a fake connection whose writes never finish (a client that never reads).
 */

import assert from "node:assert/strict";
import { FrameSocket, type MemoryBudget } from "../../lib/ws/frame_socket.ts";
import { maskedFrame, OPCODE } from "../helpers/raw_ws.ts";

/** A connection whose reads come from `chunks` (then never end) and whose writes never finish. */
function stalledConn(chunks: Uint8Array[]): Deno.Conn {
  let next = 0;
  return {
    read(buffer: Uint8Array): Promise<number | null> {
      if (next >= chunks.length) return new Promise(() => {});
      const chunk = chunks[next++];
      buffer.set(chunk.subarray(0, buffer.length));
      if (chunk.length > buffer.length) chunks.splice(next, 0, chunk.subarray(buffer.length));
      return Promise.resolve(Math.min(chunk.length, buffer.length));
    },
    write: () => new Promise<number>(() => {}),
    close() {},
  } as unknown as Deno.Conn;
}

/** A budget that records what it holds. */
function recordingBudget(limit: number): MemoryBudget & { held: number; most: number } {
  return {
    held: 0,
    most: 0,
    take(bytes: number) {
      if (this.held + bytes > limit) throw new Error("over the budget");
      this.held += bytes;
      this.most = Math.max(this.most, this.held);
    },
    give(bytes: number) {
      this.held -= bytes;
    },
  };
}

const turns = (n: number) =>
  (async () => {
    for (let i = 0; i < n; i++) await new Promise((resolve) => setTimeout(resolve, 0));
  })();

function open(
  frames: Uint8Array[],
  budget?: MemoryBudget,
): { socket: FrameSocket; messages: (string | Uint8Array)[]; closes: number[] } {
  const socket = new FrameSocket({ maxMessage: 16 << 20, pingIntervalMs: 60_000, budget });
  const messages: (string | Uint8Array)[] = [];
  const closes: number[] = [];
  socket.bind({
    onMessage: (data) => messages.push(data),
    onViolation: (code) => closes.push(code),
    onClose: () => {},
  });
  const bytes = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  let at = 0;
  for (const frame of frames) {
    bytes.set(frame, at);
    at += frame.length;
  }
  void socket.serve(stalledConn([bytes]), new Uint8Array(10), {
    rest: new Uint8Array(0),
    more: null,
  });
  return { socket, messages, closes };
}

Deno.test("a client that pings without reading has one pong waiting, answering its last ping", async () => {
  const pings = Array.from(
    { length: 5000 },
    (_, i) => maskedFrame(OPCODE.ping, new TextEncoder().encode(`p${i}`)),
  );
  const { socket } = open(pings);
  await turns(5);
  // The 101 head (10 bytes, stuck in the write that never finishes) and one pong of "p4999".
  assert.ok(socket.bufferedAmount <= 10 + 2 + 5, `${socket.bufferedAmount} bytes waiting`);
  socket.close(1000, "done");
});

Deno.test("a message of many empty fragments is put together without holding anything per fragment", async () => {
  const empty = maskedFrame(OPCODE.continuation, new Uint8Array(0), false);
  const frames = [maskedFrame(OPCODE.text, new TextEncoder().encode('{"a":'), false)];
  for (let i = 0; i < 300_000; i++) frames.push(empty);
  const before = Deno.memoryUsage().heapUsed;
  const { socket, messages } = open([
    ...frames,
    maskedFrame(OPCODE.continuation, new TextEncoder().encode("1}"), true),
  ]);
  const during = await (async () => {
    let most = 0;
    for (let i = 0; i < 200 && messages.length === 0; i++) {
      await turns(1);
      most = Math.max(most, Deno.memoryUsage().heapUsed - before);
    }
    return most;
  })();
  assert.deepEqual(messages, ['{"a":1}']);
  // A list of 300 000 fragments held about 100 MB.
  assert.ok(during < 40 * 1024 * 1024, `the heap grew by ${during} bytes`);
  socket.close(1000, "done");
});

Deno.test("large messages being received are held against the budget, and one past it closes with 1013", async () => {
  const budget = recordingBudget(1 << 20);
  const big = maskedFrame(OPCODE.text, new TextEncoder().encode(`"${"x".repeat(600_000)}"`));
  const first = open([big], budget);
  await turns(5);
  assert.equal(first.messages.length, 1, "a message within the budget is read");
  assert.ok(budget.most >= 600_000, `held ${budget.most} bytes while reading it`);
  assert.equal(budget.held, 0, "given back once read");
  // Two sockets each partway through a 600 kB message: the second does not fit in 1 MiB.
  const half = big.subarray(0, 300_000);
  const a = open([half], budget);
  const b = open([half], budget);
  await turns(5);
  assert.deepEqual(a.closes, []);
  assert.deepEqual(b.closes, [1013]);
  assert.ok(budget.held <= 1 << 20);
  a.socket.close(1000, "done");
  b.socket.close(1000, "done");
  first.socket.close(1000, "done");
});

Deno.test("before auth a frame over 4 KiB is refused from its head, holding nothing of the budget", async () => {
  const budget = recordingBudget(64 << 20);
  const head = maskedFrame(OPCODE.text, new Uint8Array(5000)).subarray(0, 100); // 100 bytes of it
  const { socket, closes } = open([], budget);
  socket.unauthenticated = true;
  const late = open([head], budget);
  late.socket.unauthenticated = true;
  await turns(5);
  assert.deepEqual(late.closes, [1008]);
  assert.equal(budget.most, 0, "nothing held for it");
  assert.deepEqual(closes, []);
  socket.close(1000, "done");
  late.socket.close(1000, "done");
});
