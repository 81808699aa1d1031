/**
 * Found by the PostgreSQL-restart campaign: a tegami server died with `Uncaught TypeError:
 * Cannot read properties of null (reading 'write')` thrown by the driver's `nextWrite` from a
 * `setImmediate`, after PostgreSQL dropped a connection with a write still queued. Nothing can
 * catch it, so it ends the whole process — every instance that meets it. This reproduces it
 * deterministically (a query on a pinned connection whose backend was terminated): the process
 * must live on. The driver then leaves that query unanswered, which the store's write deadline
 * and pool replacement absorb (`lib/store/postgres/pg_group_commit.ts`). The same campaign later
 * found the error's second way to kill: thrown from an immediate, it leaves Deno's immediate
 * queue to crash on `_idleNext` when the next immediate was cleared; the child reproduces that
 * first.
 */

import assert from "node:assert/strict";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../helpers/pg.ts";

const db = await pgTestDatabase();
const CHILD = new URL("./pg_dead_connection.ts", import.meta.url).pathname;

Deno.test({
  name: "postgres: a query on a connection whose backend died never ends the process",
  ignore: db === null,
  fn: async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", CHILD, db!.url],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, text);
    assert.match(text, /immediates: the queue lived on/, text);
    assert.match(text, /connect ECONNREFUSED left unhandled: lived on/, text);
    assert.match(text, /read ECONNRESET left unhandled: lived on/, text);
    assert.match(text, /query 1: (?!answered).+\nquery 2: /, text); // the first one fails
    assert.match(text, /survived/, text);
  },
});

dropPgTestDatabaseAfterwards(db);
