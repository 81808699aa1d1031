/**
 * How the server's own WebSocket (frame_socket.ts) groups frames into writes: frames sent in one
 * turn of the event loop, a few promise hops apart (a commit's push and its batch's reply), go
 * in one write; a frame sent in a later turn goes in a write of its own. Driven through a fake
 * connection that records its writes.
 */

import assert from "node:assert/strict";
import { FrameSocket } from "../../lib/ws/frame_socket.ts";

/** A connection whose reads never end and whose writes are recorded and finish at once. */
function recordingConn(writes: Uint8Array[]): Deno.Conn {
  return {
    read: () => new Promise<number | null>(() => {}),
    write(bytes: Uint8Array): Promise<number> {
      writes.push(bytes.slice());
      return Promise.resolve(bytes.length);
    },
    close() {},
  } as unknown as Deno.Conn;
}

/** The text payloads of the unmasked server frames in `bytes` (short frames only). */
function texts(bytes: Uint8Array): string[] {
  const out: string[] = [];
  for (let at = 0; at < bytes.length;) {
    const length = bytes[at + 1] & 0x7f;
    assert.ok(length < 126, "short frames only");
    out.push(new TextDecoder().decode(bytes.subarray(at + 2, at + 2 + length)));
    at += 2 + length;
  }
  return out;
}

async function served(): Promise<{ socket: FrameSocket; writes: Uint8Array[] }> {
  const socket = new FrameSocket({ maxMessage: 1 << 20, pingIntervalMs: 60_000 });
  socket.bind({ onMessage: () => {}, onViolation: () => {}, onClose: () => {} });
  const writes: Uint8Array[] = [];
  void socket.serve(recordingConn(writes), new TextEncoder().encode("HEAD"), {
    rest: new Uint8Array(0),
    more: null,
  });
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(writes.length, 1, "the head is written first, alone");
  writes.length = 0;
  return { socket, writes };
}

const turn = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("FrameSocket.send() joins frames sent a few promise hops apart in one write", async () => {
  const { socket, writes } = await served();
  socket.send('{"op":"jobs"}');
  for (let i = 0; i < 6; i++) await Promise.resolve();
  socket.send('{"op":"ok"}');
  await turn();
  assert.equal(writes.length, 1, `${writes.length} writes`);
  assert.deepEqual(texts(writes[0]), ['{"op":"jobs"}', '{"op":"ok"}']);
  socket.close(1000, "done");
});

Deno.test("FrameSocket.send() writes a frame of a later turn on its own", async () => {
  const { socket, writes } = await served();
  socket.send('{"n":1}');
  await turn();
  socket.send('{"n":2}');
  await turn();
  assert.deepEqual(writes.map(texts), [['{"n":1}'], ['{"n":2}']]);
  socket.close(1000, "done");
});
