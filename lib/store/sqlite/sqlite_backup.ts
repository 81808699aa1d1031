/**
 * Backups of a SQLite database while its server keeps serving, and the checks of a copy.
 *
 * A backup is SQLite's `VACUUM INTO` a temporary file beside the target, on a second, read-only
 * connection in a Worker (`sqlite_backup_worker.js`): its read transaction sees every commit made
 * before it began and none after, so the copy is consistent and compacted, and the server's
 * thread only polls the temporary file's size for progress. The copy is fsynced, checked
 * (`integrity_check`, a tegami schema this program knows), renamed over the target and its
 * directory fsynced: the target is either the old file or the whole new copy.
 *
 * While it runs, the WAL cannot be checkpointed past the copy's snapshot, so it grows by what is
 * written meanwhile, and is truncated again by the first checkpoint after.
 *
 * @module
 */

import { dirname, resolve } from "node:path";
import { TegamiError } from "../../core/errors.ts";
import { JOB_STATES, type JobState } from "../../core/job.ts";
import { MIGRATIONS } from "./sqlite_schema.ts";
import workerSource from "./sqlite_backup_worker.js" with { type: "text" };

/** What a checked copy holds. */
export interface CopyReport {
  /** The copy's path. */
  path: string;
  /** Its size in bytes. */
  bytes: number;
  /** Its schema version (`PRAGMA user_version`). */
  schema_version: number;
  /** Its jobs by state. */
  counts: Record<JobState, number>;
  /** When the last lease held in the copy ends (ms since the epoch), or null if none is. */
  leased_until: number | null;
}

/** A backup, running or finished, as `GET /v1/backup` shows it. */
export interface BackupStatus {
  /** `running`, `done` or `failed`. */
  state: "running" | "done" | "failed";
  /** The target file. */
  path: string;
  /** When it started (ms since the epoch). */
  started_at: number;
  /** When it ended, or null while it runs. */
  finished_at: number | null;
  /** How long it took (ms), or null while it runs. */
  took_ms: number | null;
  /** Bytes of the copy written so far. */
  bytes_written: number;
  /** About how large the copy will be (the pages in use), or null until known. */
  bytes_total: number | null;
  /** What the copy holds, once done. */
  report: CopyReport | null;
  /** Why it failed, or null. */
  error: string | null;
}

/** Options of {@linkcode SqliteBackup}. */
export interface SqliteBackupOptions {
  /** The database file the server serves. */
  path: string;
  /**
   * The directory backups are written into (`--backup-dir`): a target is a file in it or below
   * it, never anywhere else on the host, whatever the request names.
   */
  dir: string;
  /** The wall clock (ms since the epoch). @default Date.now */
  now?: () => number;
  /** Hears each backup's end. */
  onFinished?: (status: BackupStatus) => void;
}

interface WorkerReport {
  path: string;
  bytes: number;
  schemaVersion: number;
  counts: Record<string, number>;
  leasedUntil: number | null;
}

type WorkerMessage =
  | { type: "started"; totalBytes: number }
  | { type: "done"; report: WorkerReport }
  | { type: "failed"; message: string; checked: boolean };

/** A copy that fails its checks (or cannot be read): the message says which. */
export class CopyCheckError extends Error {}

/**
 * The worker's module as a `data:` URL. Not a file (a compiled binary carries a worker file only
 * when built with `--include`), and not a blob URL, which a compiled binary's module loader may
 * not resolve and which the runtime may read after a revoke that follows `new Worker` at once.
 */
const WORKER_URL = `data:text/javascript,${encodeURIComponent(workerSource)}`;

/** Starts the backup worker. */
function startWorker(onMessage: (message: WorkerMessage) => void): Worker {
  const worker = new Worker(WORKER_URL, { type: "module", name: "tegami-backup" });
  worker.onmessage = (event: MessageEvent<WorkerMessage>) => onMessage(event.data);
  worker.onerror = (event) => {
    event.preventDefault();
    onMessage({ type: "failed", message: event.message, checked: false });
  };
  return worker;
}

function copyReport(report: WorkerReport): CopyReport {
  const counts = Object.fromEntries(JOB_STATES.map((s) => [s, report.counts[s] ?? 0]));
  return {
    path: report.path,
    bytes: report.bytes,
    schema_version: report.schemaVersion,
    counts: counts as Record<JobState, number>,
    leased_until: report.leasedUntil,
  };
}

/**
 * Checks a copy offline, on a Worker: SQLite's `integrity_check`, a tegami schema this program
 * can open, and counts its jobs by state.
 *
 * @throws {CopyCheckError} naming the first check it fails.
 */
export function verifyCopy(path: string): Promise<CopyReport> {
  return new Promise((resolve, reject) => {
    let worker: Worker | null = null;
    worker = startWorker((message) => {
      worker?.terminate();
      if (message.type === "done") resolve(copyReport(message.report));
      else if (message.type === "failed") reject(new CopyCheckError(message.message));
    });
    worker.postMessage({ op: "verify", path, schemaVersion: MIGRATIONS.length });
  });
}

/** Takes backups of one database, one at a time, and remembers the last. */
export class SqliteBackup {
  readonly #path: string;
  readonly #dir: string;
  readonly #now: () => number;
  readonly #onFinished: ((status: BackupStatus) => void) | undefined;
  #status: BackupStatus | null = null;
  #temp: string | null = null;
  #worker: Worker | null = null;
  #startedAt = 0;
  #closed = false;

  /** Backups of the database `options.path`; none runs until {@linkcode SqliteBackup.start}. */
  constructor(options: SqliteBackupOptions) {
    this.#path = options.path;
    this.#dir = resolve(options.dir);
    this.#now = options.now ?? Date.now;
    this.#onFinished = options.onFinished;
  }

  /**
   * Starts a backup into `file`, a path inside the backup directory (a relative one is taken
   * from it), written by this process.
   *
   * @throws {TegamiError} `conflict` while another backup runs; `validation_failed` for a target
   * outside the backup directory, the database or one of its files, a link, or a file whose
   * directory is missing.
   */
  start(file: string): BackupStatus {
    if (this.#closed) {
      throw new TegamiError("unavailable", "Cannot back up: the server is shutting down");
    }
    if (this.#status?.state === "running") {
      throw new TegamiError(
        "conflict",
        `Cannot back up: a backup into "${this.#status.path}" is running`,
      );
    }
    if (this.#path === ":memory:") {
      throw new TegamiError("conflict", "Cannot back up: the database is in memory");
    }
    const target = this.#checkTarget(file);
    const temp = `${target}.tmp-${crypto.randomUUID().slice(0, 8)}`;
    this.#temp = temp;
    this.#startedAt = performance.now();
    const status: BackupStatus = {
      state: "running",
      path: target,
      started_at: this.#now(),
      finished_at: null,
      took_ms: null,
      bytes_written: 0,
      bytes_total: null,
      report: null,
      error: null,
    };
    this.#status = status;
    this.#worker = startWorker((message) => {
      if (message.type === "started") {
        status.bytes_total = message.totalBytes;
        return;
      }
      this.#worker?.terminate();
      this.#worker = null;
      this.#temp = null;
      status.finished_at = this.#now();
      status.took_ms = Math.round(performance.now() - this.#startedAt);
      if (message.type === "done") {
        status.state = "done";
        status.report = copyReport(message.report);
        status.bytes_written = status.report.bytes;
      } else {
        status.state = "failed";
        status.error = message.message;
        void removeQuietly(temp);
      }
      this.#onFinished?.({ ...status });
    });
    this.#worker.postMessage({
      op: "backup",
      source: this.#path,
      target,
      temp,
      schemaVersion: MIGRATIONS.length,
    });
    return { ...status };
  }

  /** The running or last backup, or null; a running one's `bytes_written` is read now. */
  async status(): Promise<BackupStatus | null> {
    const status = this.#status;
    if (status === null) return null;
    const temp = this.#temp;
    if (status.state === "running" && temp !== null) {
      try {
        status.bytes_written = (await Deno.stat(temp)).size;
      } catch {
        // not created yet, or just renamed
      }
    }
    return { ...status };
  }

  /**
   * Stops a running backup and removes its temporary file. A `VACUUM INTO` already in SQLite
   * runs to its end on its thread, which the process's exit ends.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    const temp = this.#temp;
    if (worker === null || temp === null) return;
    worker.terminate();
    this.#worker = null;
    this.#temp = null;
    if (this.#status !== null) {
      Object.assign(this.#status, {
        state: "failed",
        finished_at: this.#now(),
        took_ms: Math.round(performance.now() - this.#startedAt),
        error: "the server shut down",
      });
    }
    await removeQuietly(temp);
  }

  /** The absolute path `file` names inside the backup directory, or `validation_failed`. */
  #checkTarget(file: string): string {
    if (file === "" || file.includes("\0")) {
      throw new TegamiError("validation_failed", `Invalid "path": expected a file name or path`);
    }
    const target = resolve(this.#dir, file);
    const outside = () =>
      new TegamiError(
        "validation_failed",
        `Invalid "path": "${target.slice(0, 300)}" is outside the backup directory ` +
          `"${this.#dir}" (--backup-dir)`,
      );
    // Compared once links are resolved: a link inside the directory cannot lead out of it.
    let root: string;
    let parent: string;
    try {
      root = Deno.realPathSync(this.#dir);
      parent = Deno.realPathSync(dirname(target));
    } catch {
      throw new TegamiError(
        "validation_failed",
        `Invalid "path": its directory "${dirname(target)}" does not exist on the server's host`,
      );
    }
    if (parent !== root && !parent.startsWith(root.endsWith("/") ? root : `${root}/`)) {
      throw outside();
    }
    try {
      if (Deno.lstatSync(target).isSymlink) {
        throw new TegamiError("validation_failed", `Invalid "path": "${target}" is a link`);
      }
    } catch (error) {
      if (error instanceof TegamiError) throw error;
    }
    const own = [this.#path, `${this.#path}-wal`, `${this.#path}-shm`, `${this.#path}.lock`];
    if (own.some((file) => sameFile(file, target))) {
      throw new TegamiError(
        "validation_failed",
        `Invalid "path": "${target}" is the database or one of its files`,
      );
    }
    const dir = target.slice(0, Math.max(1, target.lastIndexOf("/")));
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync(dir);
    } catch {
      throw new TegamiError(
        "validation_failed",
        `Invalid "path": its directory "${dir}" does not exist on the server's host`,
      );
    }
    if (!info.isDirectory) {
      throw new TegamiError("validation_failed", `Invalid "path": "${dir}" is not a directory`);
    }
    return target;
  }
}

/** True when `a` and `b` name the same file (by inode when both exist, else by path). */
function sameFile(a: string, b: string): boolean {
  try {
    const x = Deno.statSync(a);
    const y = Deno.statSync(b);
    return x.dev === y.dev && x.ino === y.ino && x.ino !== null;
  } catch {
    return a === b;
  }
}

async function removeQuietly(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch {
    // already gone
  }
}
