import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { SqliteStore } from "../lib/store/sqlite/sqlite_store.ts";
import { SUITE_POLICY } from "./store_suite.ts";

function pragma(path: string, name: string): number {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return Object.values(db.prepare(`PRAGMA ${name}`).get()!)[0] as number;
  } finally {
    db.close();
  }
}

Deno.test("SqliteStore.open() makes a new file with 1 KiB pages, and keeps an old file's own", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami-pages-" });
  try {
    const fresh = `${dir}/fresh.db`;
    await SqliteStore.open({ path: fresh, policy: SUITE_POLICY }).close();
    assert.equal(pragma(fresh, "page_size"), 1024);

    const old = `${dir}/old.db`;
    const made = new DatabaseSync(old);
    made.exec("PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE t (x)");
    made.close();
    const store = SqliteStore.open({ path: old, policy: SUITE_POLICY });
    await store.enqueue("q", [{
      payload: "1",
      priority: 0,
      key: null,
      run_at: 0,
      max_attempts: 1,
      lease_ms: null,
      backoff: null,
    }], 0);
    await store.close();
    assert.equal(pragma(old, "page_size"), 4096);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
