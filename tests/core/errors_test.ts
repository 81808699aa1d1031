/** Errors: the messages a caller gets stay short whatever the caller sent. */

import assert from "node:assert/strict";
import { invalid } from "../../lib/core/errors.ts";

Deno.test("invalid() repeats at most 128 characters of a field's name", () => {
  assert.equal(invalid("priorty", "unknown field").message, 'Invalid "priorty": unknown field');
  const error = invalid("f".repeat(100_000), "unknown field");
  assert.equal(error.code, "validation_failed");
  assert.equal(error.message, `Invalid "${"f".repeat(128)}…": unknown field`);
});
