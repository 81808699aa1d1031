/**
 * Whether the client runs on Node, and Node's built-in modules when it does. Read through
 * `process.getBuiltinModule` (Node 20.16 and later), so that nothing here is an import a
 * bundler, Deno or a browser would have to resolve: elsewhere the answer is null and the client
 * keeps to the standard `fetch` and `WebSocket`.
 *
 * @module
 */

/** What the client's transports use of a `node:net` socket. */
export interface NetSocket {
  /** Turns Nagle's algorithm off (true). */
  setNoDelay(noDelay: boolean): void;
  /** Writes bytes. */
  write(bytes: Uint8Array): boolean;
  /** Bytes arrived. */
  on(event: "data", listener: (chunk: Uint8Array) => void): void;
  /** Connected, or closed. */
  on(event: "close" | "connect", listener: () => void): void;
  /** Failed (a close follows). */
  on(event: "error", listener: (error: unknown) => void): void;
  /** Ends the connection after what was written. */
  end(): void;
  /** Ends the connection at once. */
  destroy(): void;
  /** Keeps the process alive while this socket is open. */
  ref(): void;
  /** Lets the process exit while this socket is open. */
  unref(): void;
  /** Bytes written and not yet sent. */
  readonly writableLength: number;
}

/** What the client's transports use of `node:net`. */
export interface NodeNet {
  /** Opens a TCP connection. */
  connect(options: { host: string; port: number }): NetSocket;
}

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
