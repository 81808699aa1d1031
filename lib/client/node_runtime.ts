/**
 * Whether the client runs on Node, and Node's built-in modules when it does. Read through
 * `process.getBuiltinModule` (Node 20.16 and later), so that nothing here is an import a
 * bundler, Deno or a browser would have to resolve: elsewhere the answer is null and the client
 * keeps to the standard `fetch` and `WebSocket`.
 *
 * @module
 */

interface NodeProcess {
  versions?: { node?: string };
  getBuiltinModule?: (name: string) => unknown;
}

/**
 * Node's built-in module `name` (e.g. `node:net`) when running on Node, else null. Deno, which
 * also has a `process` global, answers null: it has faster paths of its own.
 */
export function nodeBuiltin<T>(name: string): T | null {
  if ("Deno" in globalThis) return null;
  const process = (globalThis as { process?: NodeProcess }).process;
  if (typeof process?.versions?.node !== "string") return null;
  if (typeof process.getBuiltinModule !== "function") return null;
  return (process.getBuiltinModule(name) as T | undefined) ?? null;
}
