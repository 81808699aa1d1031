/**
 * Which pages a SQLite server's commits write: reads the frames of a database's write-ahead log
 * (every frame is one whole page a commit dirtied) and names the table or index each page belongs
 * to (SQLite's `dbstat`). Disk bytes per job are pages per commit × page size ÷ jobs per commit,
 * so this shows where they come from: the table's tail, each index a job enters or leaves, the
 * b-trees' interior pages when a leaf splits, page 1 when the file grows.
 *
 * The log holds the frames written since the last checkpoint (at most ≈ 15 MiB of them for
 * tegami), so the figures cover the end of a run, not all of it.
 *
 *     deno run -A bench/wal_pages.ts FILE.db      # FILE.db-wal next to it
 *
 * `deno task bench --wal-pages` prints the same for each tegami workload on SQLite, read from the
 * live server's files once the workload is over.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";

/** The frames of one write-ahead log, by the b-tree their page belongs to. */
export interface WalPages {
  /** Page size in bytes. */
  pageSize: number;
  /** Frames of the current log (those of earlier, checkpointed ones left out). */
  frames: number;
  /** Commits among them (frames that end a transaction). */
  commits: number;
  /** Frames per b-tree, its name with ` (interior)` for interior pages, most first. */
  byTree: [tree: string, frames: number][];
}

const WAL_HEADER = 32;
const FRAME_HEADER = 24;

/** The pages of the log of `dbPath` (`dbPath-wal`), each named by its b-tree. */
export async function walPages(dbPath: string): Promise<WalPages> {
  const log = await Deno.readFile(`${dbPath}-wal`);
  const view = new DataView(log.buffer, log.byteOffset, log.byteLength);
  if (log.length < WAL_HEADER) return { pageSize: 0, frames: 0, commits: 0, byTree: [] };
  const pageSize = view.getUint32(8);
  const salt = [view.getUint32(16), view.getUint32(20)];
  const pages: number[] = [];
  let commits = 0;
  // Frames of a log that was restarted after a checkpoint carry new salts; the older frames
  // behind them are stale.
  for (
    let at = WAL_HEADER;
    at + FRAME_HEADER + pageSize <= log.length;
    at += FRAME_HEADER + pageSize
  ) {
    if (view.getUint32(at + 8) !== salt[0] || view.getUint32(at + 12) !== salt[1]) break;
    pages.push(view.getUint32(at));
    if (view.getUint32(at + 4) !== 0) commits++;
  }
  const owners = await pageOwners(dbPath, log);
  const counts = new Map<string, number>();
  for (const page of pages) {
    const tree = page === 1 ? "page 1 (file header)" : owners.get(page) ?? "free list";
    counts.set(tree, (counts.get(tree) ?? 0) + 1);
  }
  return {
    pageSize,
    frames: pages.length,
    commits,
    byTree: [...counts].sort((a, b) => b[1] - a[1]),
  };
}

/**
 * Page number → b-tree name, read through a copy of the database and its log: opening the
 * original would checkpoint its log when closed.
 */
async function pageOwners(dbPath: string, log: Uint8Array): Promise<Map<number, string>> {
  const dir = await Deno.makeTempDir({ prefix: "tegami-wal-pages-" });
  try {
    await Deno.copyFile(dbPath, `${dir}/copy.db`);
    await Deno.writeFile(`${dir}/copy.db-wal`, log);
    const db = new DatabaseSync(`${dir}/copy.db`);
    try {
      const owners = new Map<number, string>();
      const rows = db.prepare("SELECT name, pageno, pagetype FROM dbstat").all();
      for (const row of rows as { name: string; pageno: number; pagetype: string }[]) {
        owners.set(row.pageno, row.pagetype === "internal" ? `${row.name} (interior)` : row.name);
      }
      return owners;
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** One line for the bench's notes: pages per commit, and per b-tree. */
export function describeWalPages(pages: WalPages): string {
  if (pages.commits === 0) return "WAL pages: no commit since the last checkpoint";
  const per = (n: number) => (n / pages.commits).toFixed(2);
  // Trees written once or twice in the log's whole span (its schema, at creation) are left out.
  const trees = pages.byTree.filter(([, n]) => n / pages.commits >= 0.01)
    .map(([tree, n]) => `${tree} ${per(n)}`).join(", ");
  return `WAL pages per commit ${
    per(pages.frames)
  } (over the last ${pages.commits} commits): ${trees}`;
}

if (import.meta.main) {
  const [file] = Deno.args;
  if (file === undefined) {
    console.error("usage: deno run -A bench/wal_pages.ts FILE.db   (reads FILE.db-wal)");
    Deno.exit(2);
  }
  const pages = await walPages(file);
  console.log(
    `${pages.frames} frames of ${pages.pageSize} bytes in ${pages.commits} commits: ` +
      `${(pages.frames / Math.max(1, pages.commits)).toFixed(2)} pages per commit`,
  );
  for (const [tree, n] of pages.byTree) {
    console.log(`  ${tree.padEnd(32)} ${String(n).padStart(7)}  ${(n / pages.commits).toFixed(2)}`);
  }
}
