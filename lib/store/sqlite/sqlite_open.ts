/**
 * Opening a SQLite database for the store: the one-server lock beside the file, the pragmas the
 * store relies on (WAL, the page size of a new file, checkpoints, the page cache), the schema's
 * migrations, and forgetting an outside `ANALYZE`'s samples.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { migrate } from "./sqlite_schema.ts";
import { forgetValueSamples } from "./sqlite_statements.ts";

/** WAL bytes after which a commit checkpoints (as pages of the file's own size). */
const CHECKPOINT_BYTES = 15_000 * 1024;

/**
 * The page size of a database file this store creates unless told otherwise, in bytes: SQLite's
 * own. Smaller pages write fewer bytes per job, since a commit writes each page it dirtied whole
 * and most of a commit's pages are index tails changed by a few entries; but SQLite writes the log
 * one page at a time, so they take more system calls for the same rows, on the main thread,
 * and batch intake pays for them (docs/performance.md, "Page size").
 */
export const DEFAULT_PAGE_SIZE = 4096;

/**
 * Opens (creating if needed) and migrates the database at `path` (`:memory:` for none), taking
 * the one-server lock. Throws a plain `Error` with a one-line reason when the file is held by
 * another server.
 */
export function openDatabase(
  path: string,
  pageSize: number,
): { db: DatabaseSync; lock: Deno.FsFile | null } {
  const inMemory = path === ":memory:";
  let lock: Deno.FsFile | null = null;
  if (!inMemory) {
    const lockPath = `${path}.lock`;
    lock = Deno.openSync(lockPath, { create: true, read: true, write: true });
    if (!lock.tryLockSync(true)) {
      lock.close();
      throw new Error(
        `Cannot open database "${path}": another tegami server is using it ` +
          `(lock "${lockPath}" is held)`,
      );
    }
  }
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(path);
    configureDatabase(db, path, pageSize);
    migrate(db);
    forgetValueSamples(db);
    return { db, lock };
  } catch (error) {
    db?.close();
    lock?.close();
    throw error;
  }
}

/**
 * Sets the pragmas the store runs with on a database just opened at `path`: WAL, the page size
 * of a new file, NORMAL sync (the store fsyncs itself), the log's size and checkpoint policy, the
 * page cache. `bench/sqlite_layouts.ts` opens its own tables with them too.
 */
export function configureDatabase(db: DatabaseSync, path: string, pageSize: number): void {
  const inMemory = path === ":memory:";
  db.exec("PRAGMA busy_timeout = 5000");
  // Before anything is written: a new file takes this page size for good (a WAL database
  // keeps the one it was made with, so a file that exists goes on with its own).
  db.exec(`PRAGMA page_size = ${Math.trunc(pageSize)}`);
  if (!inMemory) {
    const mode = db.prepare("PRAGMA journal_mode = WAL").get() as { journal_mode: string };
    if (mode.journal_mode !== "wal") {
      throw new Error(`Cannot open database "${path}": WAL mode is not available`);
    }
  }
  // NORMAL: a commit writes the WAL without fsync. With `sync: "full"` (the default) the
  // store fsyncs the WAL itself, off the event loop, before answering (wal_sync.ts).
  db.exec("PRAGMA synchronous = NORMAL");
  // Keep the WAL file from growing without bound: truncated to 64 MiB after checkpoints.
  db.exec("PRAGMA journal_size_limit = 67108864");
  // A checkpoint copies each page the WAL holds once, however often it was rewritten: the
  // hot pages (the tails of the indexes) are rewritten by every commit, so checkpointing
  // every 15 MiB of WAL rather than every 4 MiB (1 000 pages) writes them to the file less
  // often.
  const size = (db.prepare("PRAGMA page_size").get() as { page_size: number }).page_size;
  db.exec(`PRAGMA wal_autocheckpoint = ${Math.ceil(CHECKPOINT_BYTES / size)}`);
  // 16 MiB of page cache; while the store opens, sorts (a migration's index build, the
  // startup count over millions of rows) spill to temp files instead of memory, which keeps
  // a large file's startup small in memory. The constructor then makes it memory.
  db.exec("PRAGMA cache_size = -16384");
  db.exec("PRAGMA temp_store = FILE");
}
