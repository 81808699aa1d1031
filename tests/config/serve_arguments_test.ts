/**
 * `tegami serve` takes only flags: a stray argument is refused with its name, and one that follows
 * a `--` (as `deno task start -- --db x` passes it on) is told to leave the `--` out.
 */

import assert from "node:assert/strict";
import { ConfigError } from "../../lib/config/flags.ts";
import { resolveServeConfig } from "../../lib/config/serve_config.ts";

function refusal(args: string[]): string {
  try {
    resolveServeConfig(args, {});
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.message;
  }
  assert.fail(`${JSON.stringify(args)} was accepted`);
}

Deno.test("serve refuses an argument that is not a flag, by name", () => {
  assert.equal(
    refusal(["--port", "0", "jobs.db"]),
    'Unexpected argument "jobs.db": tegami serve takes only flags',
  );
});

Deno.test('serve says why flags after "--" are refused', () => {
  assert.equal(
    refusal(["--", "--db", "/tmp/x.db"]),
    'Unexpected argument "--db": tegami serve takes only flags (it comes after "--", which ends ' +
      'the flags: leave the "--" out)',
  );
  assert.equal(resolveServeConfig(["--db", "/tmp/x.db"], {}).db, "/tmp/x.db");
});
