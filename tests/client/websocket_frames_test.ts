/**
 * RFC 6455 framing shared by the SDK's client and the server's own WebSocket: heads read from
 * partial bytes, the three length forms, masking, and close payloads that fit a control frame.
 */

import assert from "node:assert/strict";
import {
  closePayload,
  frameHead,
  headLength,
  OP,
  readFrameHead,
  unmask,
  writeFrameHead,
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

Deno.test("writeFrameHead() writes heads back to back at any offset, each of headLength()", () => {
  const lengths = [0, 125, 126, 65535, 65536, 2 ** 40];
  const sizes = lengths.map((length) => headLength(length, false));
  assert.deepEqual(sizes, [2, 2, 4, 4, 10, 10]);
  // Inside a larger buffer, from an odd offset, as the server joins frames into one write.
  const bytes = new Uint8Array(3 + sizes.reduce((a, b) => a + b, 0)).subarray(3);
  let at = 1;
  bytes.fill(0xee);
  const starts: number[] = [];
  for (const length of lengths.slice(0, -1)) {
    starts.push(at);
    at = writeFrameHead(bytes, at, OP.binary, length, false);
  }
  for (let i = 0; i < starts.length; i++) {
    const read = readFrameHead(bytes, starts[i], bytes.length);
    assert.equal(read?.length, lengths[i]);
    assert.equal(read?.headLength, sizes[i]);
    assert.equal(read?.op, OP.binary);
  }
  assert.equal(bytes[0], 0xee, "nothing written before the offset");
  assert.deepEqual(
    frameHead(OP.text, 65536, false),
    (() => {
      const head = new Uint8Array(10);
      writeFrameHead(head, 0, OP.text, 65536, false);
      return head;
    })(),
  );
  assert.equal(writeFrameHead(new Uint8Array(14), 0, OP.text, 2 ** 40, true), 14);
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
