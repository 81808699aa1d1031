import assert from "node:assert/strict";
import { nodeBuiltin } from "../../lib/client/node_runtime.ts";

Deno.test("nodeBuiltin() answers null on Deno, though Deno's process looks like Node's", () => {
  // Deno's process global reports a Node version and has getBuiltinModule, so the check must
  // be on Deno itself. tests/node runs the client on Node, where the modules are answered.
  const process = (globalThis as {
    process?: { versions?: { node?: unknown }; getBuiltinModule?: unknown };
  }).process;
  assert.equal(typeof process?.versions?.node, "string");
  assert.equal(typeof process?.getBuiltinModule, "function");
  assert.equal(nodeBuiltin("node:net"), null);
  assert.equal(nodeBuiltin("node:http"), null);
});
