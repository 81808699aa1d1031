/**
 * The import rules of `lib/`, checked on the real module graph (`deno info --json`, so type
 * imports, re-exports, dynamic and text imports all count, and nothing in a comment does):
 *
 * - no import cycles;
 * - layers only import downward (the table {@linkcode LAYERS});
 * - `lib/client/` (the SDK users embed) imports nothing server-side: only itself and the shared
 *   error set `lib/core/errors.ts`, and no package;
 * - nothing under `lib/` reads `Deno.args` or `Deno.env` (configuration comes in as values);
 * - only `lib/store/sqlite/` opens SQLite and only `lib/store/postgres/` imports a PostgreSQL
 *   driver (SQL lives only in the store adapters);
 * - every folder of `tests/` but the shared ones mirrors a folder of `lib/`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { relative } from "node:path";

const ROOT = new URL("../", import.meta.url).pathname;

/**
 * The layers, lowest first: a module may import its own layer and those below. A path matches
 * its longest prefix here (so `lib/core/broker.ts`, above the store seam, is not in `lib/core/`).
 */
export const LAYERS: readonly (readonly string[])[] = [
  ["lib/core/"], // the job model and its rules: errors, clock, limits, lifecycle
  ["lib/store/", "lib/client/"], // the storage seam and its engines; the SDK
  [
    "lib/core/broker.ts",
    "lib/core/scheduler.ts",
    "lib/api/",
    "lib/auth/",
    "lib/config/",
    "lib/observe/",
  ],
  ["lib/http/", "lib/ws/", "lib/dashboard/", "lib/sqs/"], // the transports and the page
  ["lib/server.ts", "lib/store/open_store.ts"], // composition: what is built from the config
  ["lib/cli/"],
  ["main.ts"],
];

/** What `lib/client/` may import from outside itself. */
const CLIENT_MAY_IMPORT = ["lib/core/errors.ts"];

/** Packages and modules that talk to PostgreSQL. */
const POSTGRES_DRIVER =
  /^(npm:\/?(postgres|pg|pg-native|pg-pool|@neondatabase\/serverless)(@|\/|$)|jsr:\/?@db\/postgres|https:\/\/deno\.land\/x\/postgres)/;

/**
 * Test folders that mirror no folder of lib/: helpers, whole-server, contract and cross-runtime
 * tests, and the bench's own tools.
 */
const SHARED_TEST_DIRS = new Set(["bench", "contract", "helpers", "node", "server", "torture"]);
/** Folders of tests that hold the parts of one suite, beside the tests that run it. */
const SUITE_TEST_DIRS = new Set(["tests/store/suite"]);

/** One module's imports: local ones as repo-relative paths, the rest as resolved specifiers. */
interface Module {
  path: string;
  local: string[];
  external: string[];
}

interface DenoInfo {
  modules: {
    specifier: string;
    dependencies?: {
      specifier: string;
      code?: { specifier: string };
      type?: { specifier: string };
    }[];
  }[];
}

function repoPath(specifier: string): string | null {
  if (!specifier.startsWith("file://")) return null;
  return relative(ROOT, new URL(specifier).pathname);
}

async function walk(dir: string, out: string[] = []): Promise<string[]> {
  for await (const entry of Deno.readDir(`${ROOT}${dir}`)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) await walk(path, out);
    else if (/\.(ts|js)$/.test(entry.name)) out.push(path);
  }
  return out;
}

/** The import graph of `main.ts` and every module under `root` (default `lib`). */
export async function importGraph(root = "lib"): Promise<Map<string, Module>> {
  const graph = new Map<string, Module>();
  const wanted = ["main.ts", ...(await walk(root)).sort()];
  for (const entry of wanted) {
    if (graph.has(entry)) continue;
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!output.success) {
      throw new Error(`deno info ${entry} failed: ${new TextDecoder().decode(output.stderr)}`);
    }
    const info = JSON.parse(new TextDecoder().decode(output.stdout)) as DenoInfo;
    for (const module of info.modules) {
      const path = repoPath(module.specifier);
      if (path === null || path.startsWith("..") || graph.has(path)) continue;
      const local: string[] = [];
      const external: string[] = [];
      for (const dep of module.dependencies ?? []) {
        for (const target of [dep.code?.specifier, dep.type?.specifier]) {
          if (target === undefined) continue;
          const to = repoPath(target);
          if (to !== null) local.push(to);
          else external.push(target);
        }
      }
      graph.set(path, { path, local: [...new Set(local)], external: [...new Set(external)] });
    }
  }
  return graph;
}

/** The layer of a path: the index of its longest matching prefix in {@linkcode LAYERS}. */
export function layerOf(path: string): number | null {
  let best: { layer: number; length: number } | null = null;
  LAYERS.forEach((prefixes, layer) => {
    for (const prefix of prefixes) {
      if ((path === prefix || path.startsWith(prefix)) && prefix.length > (best?.length ?? -1)) {
        best = { layer, length: prefix.length };
      }
    }
  });
  return (best as { layer: number } | null)?.layer ?? null;
}

/** Every import cycle among the modules, each as a path `a → b → … → a`. */
export function cycles(graph: Map<string, Module>): string[] {
  const found: string[] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (path: string) => {
    state.set(path, "open");
    stack.push(path);
    for (const next of graph.get(path)?.local ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === "open") {
        found.push([...stack.slice(stack.indexOf(next)), next].join(" → "));
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(path, "done");
  };
  for (const path of [...graph.keys()].sort()) if (!state.has(path)) visit(path);
  return found;
}

/** Every broken rule of the graph, one line each; empty when the architecture holds. */
export async function violations(graph: Map<string, Module>): Promise<string[]> {
  const out: string[] = [];
  for (const cycle of cycles(graph)) out.push(`import cycle: ${cycle}`);
  for (const module of graph.values()) {
    const from = module.path;
    if (!from.startsWith("lib/") && from !== "main.ts") continue;
    const layer = layerOf(from);
    for (const to of module.local) {
      if (!to.startsWith("lib/")) continue;
      const target = layerOf(to);
      if (layer !== null && target !== null && target > layer) {
        out.push(`upward import: ${from} (layer ${layer}) imports ${to} (layer ${target})`);
      }
      if (
        from.startsWith("lib/client/") && !to.startsWith("lib/client/") &&
        !CLIENT_MAY_IMPORT.includes(to)
      ) {
        out.push(`client imports server code: ${from} imports ${to}`);
      }
    }
    for (const to of module.external) {
      if (from.startsWith("lib/client/") && /^(npm|jsr|node):/.test(to)) {
        out.push(`client imports a package: ${from} imports ${to}`);
      }
      if (POSTGRES_DRIVER.test(to) && !from.startsWith("lib/store/postgres/")) {
        out.push(`PostgreSQL driver outside lib/store/postgres/: ${from} imports ${to}`);
      }
      if (to === "node:sqlite" && !from.startsWith("lib/store/sqlite/")) {
        out.push(`SQLite outside lib/store/sqlite/: ${from} imports ${to}`);
      }
    }
    if (from.startsWith("lib/")) {
      const code = stripComments(await Deno.readTextFile(`${ROOT}${from}`));
      for (const match of code.matchAll(/\bDeno\s*\.\s*(args|env)\b/g)) {
        out.push(`reads Deno.${match[1]}: ${from} (configuration must come in as values)`);
      }
    }
  }
  return out.sort();
}

/** Source text without its comments (enough for finding identifiers, not a full lexer). */
function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
}

Deno.test("lib/ keeps its import rules: no cycles, layers downward, client and drivers fenced", async () => {
  const graph = await importGraph();
  assert.ok(graph.has("lib/server.ts") && graph.has("lib/client/mod.ts"), "the graph was read");
  for (const path of graph.keys()) {
    if (path.startsWith("lib/")) {
      assert.notEqual(layerOf(path), null, `${path} is in no layer of LAYERS`);
    }
  }
  assert.deepEqual(await violations(graph), []);
});

Deno.test("the architecture checks catch a cycle, an upward import and a client reaching in", async () => {
  const module = (path: string, local: string[], external: string[] = []) => ({
    path,
    local,
    external,
  });
  const graph = new Map([
    ["lib/core/job.ts", module("lib/core/job.ts", ["lib/core/clock.ts"])],
    ["lib/core/clock.ts", module("lib/core/clock.ts", ["lib/core/job.ts"])],
    ["lib/store/store.ts", module("lib/store/store.ts", ["lib/http/api.ts"])],
    ["lib/client/mod.ts", module("lib/client/mod.ts", ["lib/store/store.ts"], ["npm:pg@8"])],
  ]);
  assert.deepEqual(await violations(graph), [
    "PostgreSQL driver outside lib/store/postgres/: lib/client/mod.ts imports npm:pg@8",
    "client imports a package: lib/client/mod.ts imports npm:pg@8",
    "client imports server code: lib/client/mod.ts imports lib/store/store.ts",
    "import cycle: lib/core/clock.ts → lib/core/job.ts → lib/core/clock.ts",
    "upward import: lib/store/store.ts (layer 1) imports lib/http/api.ts (layer 3)",
  ]);
});

Deno.test("every folder of tests/ mirrors a folder of lib/", async () => {
  const dirs: string[] = [];
  const collect = async (dir: string) => {
    for await (const entry of Deno.readDir(`${ROOT}${dir}`)) {
      if (!entry.isDirectory) continue;
      dirs.push(`${dir}/${entry.name}`);
      await collect(`${dir}/${entry.name}`);
    }
  };
  await collect("tests");
  for (const dir of dirs) {
    const [, top] = dir.split("/");
    if (SHARED_TEST_DIRS.has(top) || SUITE_TEST_DIRS.has(dir)) continue;
    const mirror = `${ROOT}lib/${dir.slice("tests/".length)}`;
    const found = await Deno.stat(mirror).then((s) => s.isDirectory, () => false);
    assert.ok(found, `${dir} mirrors no folder of lib/`);
  }
});
