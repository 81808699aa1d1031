/**
 * RFC 6455 framing shared by the SDK's client and the server's own WebSocket: heads read from
 * partial bytes, the three length forms, masking, and close payloads that fit a control frame.
 */

import assert from "node:assert/strict";
import {
  closePayload,
  frameHead,
  OP,
  readFrameHead,
  unmask,
} from "../../lib/client/websocket_frames.ts";

Deno.test("readFrameHead() waits for the whole head, for each length form", () => {
  for (const length of [0, 125, 126, 65535, 65536, 2 ** 40]) {
    const head = frameHead(OP.text, length, true);
    for (let cut = 0; cut < head.length; cut++) {
      assert.equal(readFrameHead(head, 0, cut), null, `length ${length}, ${cut} bytes`);
    }
    const read = readFrameHead(head, 0, head.length);
    assert.deepEqual(read, {
      fin: true,
      rsv: 0,
      op: OP.text,
      masked: true,
      headLength: head.length,
      length,
    });
  }
});

Deno.test("readFrameHead() reads reserved bits, FIN and an offset into the buffer", () => {
  const bytes = new Uint8Array([9, 9, 0x41, 0x05]);
  assert.deepEqual(readFrameHead(bytes, 2, 4), {
    fin: false,
    rsv: 4,
    op: OP.text,
    masked: false,
    headLength: 2,
    length: 5,
  });
});

Deno.test("unmask() undoes a mask at any offset and length", () => {
  const key = new Uint8Array([1, 2, 3, 4]);
  for (const n of [0, 1, 3, 4, 5, 17]) {
    const plain = Uint8Array.from({ length: n }, (_, i) => i * 7);
    const bytes = new Uint8Array(n + 3);
    bytes.set(plain.map((b, i) => b ^ key[i & 3]), 3);
    unmask(bytes, 3, n, key);
    assert.deepEqual(bytes.subarray(3), plain, `length ${n}`);
  }
});

Deno.test("closePayload() cuts a long reason on a character boundary to fit 125 bytes", () => {
  const payload = closePayload(1008, "é".repeat(100));
  assert.ok(payload.length <= 125);
  assert.equal((payload[0] << 8) | payload[1], 1008);
  assert.equal(
    new TextDecoder("utf-8", { fatal: true }).decode(payload.subarray(2)),
    "é".repeat(61),
  );
  assert.deepEqual([...closePayload(1000, "")], [0x03, 0xe8]);
});
