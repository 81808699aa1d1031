/**
 * The SQLite work of a backup, on a thread of its own: `VACUUM INTO` a temporary file, fsync it,
 * check it, rename it over the target and fsync the directory; or check a copy alone. A
 * `VACUUM INTO` of a large file runs for seconds in one call that cannot yield, and on the
 * server's thread it would hold every request and frame for as long; here it holds only this
 * thread. Its read transaction sees the database as it was when it began (WAL), while the server
 * goes on writing.
 *
 * Plain JavaScript importing nothing but `node:sqlite`: `sqlite_backup.ts` embeds it as text and
 * starts it from a `data:` URL, so a compiled binary carries it without an `--include`.
 *
 * In: `{op: "backup", source, target, temp, schemaVersion}` or `{op: "verify", path,
 * schemaVersion}`. Out: `{type: "started", totalBytes}` (backup only), then `{type: "done",
 * report}` or `{type: "failed", message}`.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";

/** @typedef {{ path: string, bytes: number, schemaVersion: number, counts: Record<string, number>, leasedUntil: number | null }} Report */

/** A copy that fails a check: its message is shown as is. */
class CheckFailed extends Error {}

/**
 * Checks a copy: a SQLite file, sound (`integrity_check`), a tegami database whose schema this
 * program knows; answers what it holds.
 *
 * @param {string} path
 * @param {number} schemaVersion the newest schema version this program knows
 * @returns {Report}
 */
function inspect(path, schemaVersion) {
  let db;
  try {
    db = new DatabaseSync(path, { readOnly: true });
  } catch (error) {
    throw new CheckFailed(`cannot open it: ${message(error)}`);
  }
  try {
    /** @param {string} sql */
    const all = (sql) => /** @type {Record<string, unknown>[]} */ (db.prepare(sql).all());
    let version;
    try {
      version = Number(all("PRAGMA user_version")[0].user_version);
    } catch (error) {
      throw new CheckFailed(`not a SQLite database (${message(error)})`);
    }
    let problems;
    try {
      problems = all("PRAGMA integrity_check(10)").map((row) => String(row.integrity_check));
    } catch (error) {
      throw new CheckFailed(`integrity_check failed: ${message(error)}`);
    }
    if (problems.length !== 1 || problems[0] !== "ok") {
      throw new CheckFailed(`integrity_check failed: ${problems.join("; ").slice(0, 500)}`);
    }
    const tables = new Set(
      all("SELECT name FROM sqlite_master WHERE type = 'table'").map((row) => row.name),
    );
    if (!tables.has("jobs") || !tables.has("queues") || version < 1) {
      throw new CheckFailed("not a tegami database: it has no jobs table or no schema version");
    }
    if (version > schemaVersion) {
      throw new CheckFailed(
        `its schema version ${version} is newer than this program's (${schemaVersion}); ` +
          "upgrade tegami",
      );
    }
    /** @type {Record<string, number>} */
    const counts = {};
    for (const row of all("SELECT state, count(*) AS n FROM jobs GROUP BY state")) {
      counts[String(row.state)] = Number(row.n);
    }
    const until = all(
      "SELECT max(lease_expires_at) AS at FROM jobs WHERE state = 'leased'",
    )[0].at;
    return {
      path,
      bytes: Deno.statSync(path).size,
      schemaVersion: version,
      counts,
      leasedUntil: until === null ? null : Number(until),
    };
  } finally {
    db.close();
  }
}

/**
 * Snapshots `source` into `temp`, makes it durable, checks it and renames it to `target`.
 *
 * @param {{ source: string, target: string, temp: string, schemaVersion: number }} order
 * @param {(totalBytes: number) => void} started
 * @returns {Report}
 */
function backup(order, started) {
  const db = new DatabaseSync(order.source, { readOnly: true });
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    /** @param {string} sql */
    const number = (sql) => Number(Object.values(/** @type {object} */ (db.prepare(sql).get()))[0]);
    const pageSize = number("PRAGMA page_size");
    // What the compacted copy will roughly weigh: the pages in use.
    started((number("PRAGMA page_count") - number("PRAGMA freelist_count")) * pageSize);
    db.prepare("VACUUM INTO ?").run(order.temp);
  } finally {
    db.close();
  }
  const file = Deno.openSync(order.temp, { read: true, write: true });
  try {
    file.syncSync();
  } finally {
    file.close();
  }
  const report = inspect(order.temp, order.schemaVersion);
  Deno.renameSync(order.temp, order.target);
  // The rename is durable once the directory is.
  const slash = order.target.lastIndexOf("/");
  const dir = Deno.openSync(slash <= 0 ? "/" : order.target.slice(0, slash), { read: true });
  try {
    dir.syncSync();
  } finally {
    dir.close();
  }
  return { ...report, path: order.target };
}

/** @param {unknown} error */
function message(error) {
  return error instanceof Error ? error.message : String(error);
}

/** @type {{ postMessage(message: unknown): void, close(): void, onmessage: unknown }} */
const scope = /** @type {any} */ (globalThis);

scope.onmessage = (/** @type {MessageEvent} */ event) => {
  const order = event.data;
  try {
    const report = order.op === "backup"
      ? backup(order, (totalBytes) => scope.postMessage({ type: "started", totalBytes }))
      : inspect(order.path, order.schemaVersion);
    scope.postMessage({ type: "done", report });
  } catch (error) {
    if (order.op === "backup") {
      try {
        Deno.removeSync(order.temp);
      } catch {
        // never made, or already renamed
      }
    }
    const checked = error instanceof CheckFailed;
    scope.postMessage({ type: "failed", message: message(error), checked });
  }
  scope.close();
};
