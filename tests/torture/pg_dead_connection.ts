/**
 * A child program for `pg_dead_connection_test.ts`: opens a connection the way the PostgreSQL
 * store does (`connectPg`), has its backend terminated, then queries on it twice. The first
 * query answers an error. The second makes the driver (postgres 3.4.9) throw from a timer
 * (`nextWrite` on a socket already gone), which no `catch` can stop: unguarded, the process
 * dies; guarded (`connectPg` drops that one error), it lives, and the query is left without an
 * answer (printed as such: the store bounds its transactions with a deadline for this reason).
 *
 * ```sh
 * deno run -A tests/torture/pg_dead_connection.ts postgres://postgres@127.0.0.1:5432/postgres
 * ```
 *
 * Before that, it throws the same error from an immediate the way the driver does, with the
 * immediate after it cleared, and leaves socket errors of node:net's as unhandled
 * rejections (see `guardDriverErrors` in pg_driver.ts).
 *
 * Prints `survived` and exits 0 when the process lived through it.
 *
 * @module
 */

import { connectPg } from "../../lib/store/postgres/pg_driver.ts";

const url = Deno.args[0];
const sql = connectPg(url, { schema: "public", max: 2 });

// The same error from an immediate, followed by an immediate that is cleared before the runtime
// resumes the batch (the driver clears its pending write when a connection closes): Deno 2.9.6's
// immediate queue then dies on "reading '_idleNext'" unless the error never leaves its immediate.
await new Promise<void>((resolve) => {
  setImmediate(() => {
    const error = new TypeError("Cannot read properties of null (reading 'write')");
    error.stack = `TypeError: ${error.message}\n    at nextWrite (file:///node_modules/postgres` +
      "/src/connection.js:255:22)";
    throw error;
  });
  const next = setImmediate(() => {});
  // Registered before the immediates run (after this task): it clears the next one at the throw.
  const clearNext = () => clearImmediate(next);
  globalThis.addEventListener("error", clearNext);
  setTimeout(() => {
    globalThis.removeEventListener("error", clearNext);
    console.log("immediates: the queue lived on");
    resolve();
  }, 50);
});

// Socket errors of node:net's left as rejected promises, as two once ended a server while
// PostgreSQL restarted: their shapes (a system error, every frame the runtime's), made here.
for (
  const [syscall, code, frame] of [
    ["connect", "ECONNREFUSED", "_afterConnectImpl (ext:deno_node/net.ts:1:6347)"],
    [
      "read",
      "ECONNRESET",
      "TCPWrap.onStreamRead (ext:deno_node/internal/stream_base_commons.ts:1:3690)",
    ],
  ]
) {
  const error = Object.assign(new Error(`${syscall} ${code}`), { code, syscall });
  error.stack = `Error: ${error.message}\n    at ${frame}`;
  Promise.reject(error);
  await new Promise((resolve) => setTimeout(resolve, 50));
  console.log(`${syscall} ${code} left unhandled: lived on`);
}

const killer = connectPg(url, { schema: "public", max: 1 });
// A reserved connection is pinned, as a LISTEN connection or a long transaction is: the pool
// cannot rotate the dead one away, so each query meets the closed socket.
const reserved = await sql.reserve();
const [{ pid }] = await reserved<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
await killer`SELECT pg_terminate_backend(${pid})`;
for (let i = 0; i < 2; i++) {
  // A query that never answers is the other way this goes wrong: it is reported, and fails.
  const answer = await Promise.race([
    reserved`SELECT 1`.then(() => "answered", (error) => (error as Error).message),
    new Promise<null>((resolve) => setTimeout(() => resolve(null), 5_000)),
  ]);
  console.log(`query ${i + 1}: ${answer ?? "no answer in 5 s"}`);
}
reserved.release();
await sql.end({ timeout: 1 });
await killer.end({ timeout: 1 });
console.log("survived");
Deno.exit(0);
