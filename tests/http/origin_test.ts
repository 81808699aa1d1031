import assert from "node:assert/strict";
import { originAllowed } from "../../lib/http/origin.ts";

Deno.test("originAllowed() lets a request without Origin through: no browser sent it", () => {
  assert.equal(originAllowed(null, "localhost:8080", []), true);
  assert.equal(originAllowed(null, null, []), true);
});

Deno.test("originAllowed() lets the same origin through, the host compared without case", () => {
  assert.equal(originAllowed("http://localhost:8080", "localhost:8080", []), true);
  assert.equal(originAllowed("https://Queue.Example", "queue.example", []), true);
  assert.equal(originAllowed("http://localhost:8081", "localhost:8080", []), false, "other port");
  assert.equal(originAllowed("http://localhost:8080", null, []), false, "no Host to compare");
});

Deno.test("originAllowed() lets a listed origin through, compared as a serialized origin", () => {
  const listed = ["https://app.example"];
  assert.equal(originAllowed("https://app.example", "localhost:8080", listed), true);
  assert.equal(originAllowed("https://app.example:443", "localhost:8080", listed), true);
  assert.equal(originAllowed("http://app.example", "localhost:8080", listed), false);
  assert.equal(originAllowed("https://evil.example", "localhost:8080", listed), false);
  assert.equal(originAllowed("https://evil.example", "localhost:8080", "*"), true);
});

Deno.test("originAllowed() refuses an Origin that is not a URL, such as an opaque null", () => {
  assert.equal(originAllowed("null", "localhost:8080", []), false);
  assert.equal(originAllowed("", "localhost:8080", ["null"]), false);
  assert.equal(originAllowed("not a url", "localhost:8080", []), false);
});
