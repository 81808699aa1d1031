/**
 * `deno task test:node`: the client SDK's tests on Node. Bundles `lib/client/mod.ts` to one ES
 * module (`deno bundle`), and `lib/client/node_websocket.ts` to another, starts a real server, and
 * runs `client_on_node.mjs`, `tracing_on_node.mjs` and `node_transports_on_node.mjs` (the Node transports, against bare
 * servers of their own) with Node's test runner on every Node it finds: the machine's `node` (Node
 * 20 with --experimental-websocket, which gives it the standard WebSocket, and without, where the
 * consumer must still work on ws://), and Node 22 and 24 from the pinned npm packages in
 * `tests/node/tools` when installed (`npm ci --prefix tests/node/tools`, as `.ci/run` does).
 * Each must pass; a Node below 20 is refused by the SDK's contract, not tried.
 *
 * @module
 */

import { spawnServer } from "../helpers/process_server.ts";

const HERE = new URL(".", import.meta.url).pathname;
const ROOT = new URL("../../", import.meta.url).pathname;

const dir = await Deno.makeTempDir({ prefix: "tegami-node-" });
const bundle = `${dir}/client.mjs`;
const websocketBundle = `${dir}/node_websocket.mjs`;
for (
  const [out, entry] of [[bundle, "lib/client/mod.ts"], [
    websocketBundle,
    "lib/client/node_websocket.ts",
  ]]
) {
  const built = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--platform", "browser", "--format", "esm", "-o", out, entry],
    cwd: ROOT,
  }).output();
  if (built.code !== 0) throw new Error(new TextDecoder().decode(built.stderr));
}

const nodes: string[] = ["node"];
for (const pkg of ["node22", "node24"]) {
  const binary = `${HERE}tools/node_modules/${pkg}/bin/node`;
  try {
    await Deno.stat(binary);
    nodes.push(binary);
  } catch {
    console.log(`(${pkg} not installed: run npm ci --prefix tests/node/tools to test it too)`);
  }
}

let failed = 0;
const results: string[] = [];
{
  await using server = await spawnServer(["--db", `${dir}/node.db`, "--backoff-base", "50ms"]);
  for (const node of nodes) {
    const version = new TextDecoder().decode(
      (await new Deno.Command(node, { args: ["--version"] }).output()).stdout,
    ).trim();
    const major = Number(/^v(\d+)/.exec(version)?.[1] ?? 0);
    const flags = major < 22 ? ["--experimental-websocket"] : [];
    console.log(`\n== Node ${version} ${flags.join(" ")}`);
    const run = await new Deno.Command(node, {
      args: [
        ...flags,
        "--test",
        "--test-reporter=spec",
        `${HERE}client_on_node.mjs`,
        `${HERE}node_transports_on_node.mjs`,
        `${HERE}tracing_on_node.mjs`,
      ],
      env: {
        TEGAMI_URL: server.url,
        TEGAMI_CLIENT: `file://${bundle}`,
        TEGAMI_NODE_WEBSOCKET: `file://${websocketBundle}`,
      },
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    results.push(`Node ${version} ${flags.join(" ")}: ${run.code === 0 ? "passed" : "FAILED"}`);
    if (run.code !== 0) failed++;
    if (flags.length > 0) {
      // Without the flag there is no WebSocket: the consumer must say what is missing.
      const bare = await new Deno.Command(node, {
        args: ["--test", "--test-reporter=spec", `${HERE}no_websocket_on_node.mjs`],
        env: { TEGAMI_URL: server.url, TEGAMI_CLIENT: `file://${bundle}` },
        stdout: "inherit",
        stderr: "inherit",
      }).output();
      results.push(`Node ${version} without the flag: ${bare.code === 0 ? "passed" : "FAILED"}`);
      if (bare.code !== 0) failed++;
    }
  }
}
await Deno.remove(dir, { recursive: true });
console.log(`\n${results.join("\n")}`);
if (failed > 0) Deno.exit(1);
