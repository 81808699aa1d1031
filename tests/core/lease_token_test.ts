import assert from "node:assert/strict";
import { newLeaseToken } from "../../lib/core/lease_token.ts";

Deno.test("lease tokens are 22 base64url characters and never repeat, across refills of the random pool", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 5000; i++) { // ≈ 20 refills of the 4 KiB pool
    const token = newLeaseToken();
    assert.match(token, /^[A-Za-z0-9_-]{22}$/);
    assert.ok(!seen.has(token), `token ${token} repeated after ${i} tokens`);
    seen.add(token);
  }
});

Deno.test("lease token characters are spread evenly: each of the 64 appears in the first position", () => {
  const first = new Set<string>();
  for (let i = 0; i < 2000; i++) first.add(newLeaseToken()[0]);
  assert.equal(first.size, 64);
});
