/**
 * The bench's reading of a write-ahead log (`bench/wal_pages.ts`): frames, commits and the b-tree
 * each page belongs to, on a real SQLite file whose log is still there.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { describeWalPages, walPages } from "../../bench/wal_pages.ts";

Deno.test("walPages() counts a log's commits and names each page's table or index", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami_wal_pages_" });
  const path = `${dir}/t.db`;
  const db = new DatabaseSync(path);
  try {
    db.exec("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0");
    db.exec(
      "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); CREATE INDEX items_name ON items (name)",
    );
    const insert = db.prepare("INSERT INTO items (name) VALUES (?)");
    for (let commit = 0; commit < 3; commit++) {
      db.exec("BEGIN");
      for (let i = 0; i < 200; i++) insert.run(`item ${commit}-${i} ${"x".repeat(40)}`);
      db.exec("COMMIT");
    }
    // Read while the connection holds the log open, as the bench reads a running server's.
    const pages = await walPages(path);
    assert.equal(pages.pageSize, 4096);
    assert.equal(pages.commits, 5); // journal_mode is not logged; two CREATEs, three batches
    const trees = new Map(pages.byTree);
    assert.ok((trees.get("items") ?? 0) >= 3, JSON.stringify(pages.byTree));
    assert.ok((trees.get("items_name") ?? 0) >= 3, JSON.stringify(pages.byTree));
    assert.ok(trees.has("page 1 (file header)"));
    let frames = 0;
    for (const [, n] of pages.byTree) frames += n;
    assert.equal(frames, pages.frames);
    assert.match(
      describeWalPages(pages),
      /^WAL pages per commit \d+\.\d\d \(over the last 5 commits\): /,
    );
    // Reading it left the log as it was: nothing was checkpointed.
    assert.equal((await Deno.stat(`${path}-wal`)).size > 4096 * pages.frames, true);
  } finally {
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
});
