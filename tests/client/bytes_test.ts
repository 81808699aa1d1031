import assert from "node:assert/strict";
import fc from "fast-check";
import { concatBytes } from "../../lib/client/bytes.ts";

Deno.test("concatBytes() answers the one part itself, and nothing for no parts", () => {
  const one = new Uint8Array([1, 2, 3]);
  assert.equal(concatBytes([one]), one);
  assert.deepEqual(concatBytes([]), new Uint8Array(0));
});

Deno.test("concatBytes() answers the parts' bytes in order, in a new array", () => {
  const a = new Uint8Array([1, 2]);
  const b = new Uint8Array(0);
  const c = new Uint8Array([3]);
  const out = concatBytes([a, b, c]);
  assert.deepEqual(out, new Uint8Array([1, 2, 3]));
  out[0] = 9;
  assert.equal(a[0], 1, "the parts are copied, not shared");
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 8 }), (parts) => {
      const expected = parts.flatMap((p) => [...p]);
      assert.deepEqual([...concatBytes(parts)], expected);
    }),
  );
});

Deno.test("concatBytes() reads only each part's own window of a shared buffer", () => {
  const buffer = new Uint8Array([0, 1, 2, 3, 4, 5, 6, 7]);
  const out = concatBytes([buffer.subarray(1, 3), buffer.subarray(5, 8)]);
  assert.deepEqual(out, new Uint8Array([1, 2, 5, 6, 7]));
});
