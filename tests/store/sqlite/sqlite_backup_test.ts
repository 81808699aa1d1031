/**
 * The SQLite backup and the checks of a copy: a sound copy is reported by state; a corrupted
 * page, a file that is not SQLite, a SQLite file that is not tegami's and a newer schema are each
 * refused with the reason; a backup never holds the event loop for the length of its VACUUM.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import {
  type BackupStatus,
  CopyCheckError,
  SqliteBackup,
  verifyCopy,
} from "../../../lib/store/sqlite/sqlite_backup.ts";
import { SqliteStore } from "../../../lib/store/sqlite/sqlite_store.ts";
import { MIGRATIONS } from "../../../lib/store/sqlite/sqlite_schema.ts";
import { retryDelayMs } from "../../../lib/core/backoff.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

const policy = {
  defaultLeaseMs: 30_000,
  retryDelayMs: (attempt: number) => retryDelayMs(attempt, { base_ms: 1000, max_ms: 60_000 }),
};

/** A tegami database at `path` holding `pending` pending and `done` done jobs, written raw. */
async function database(path: string, pending: number, done: number): Promise<void> {
  await SqliteStore.open({ path, sync: "normal", policy }).close();
  const db = new DatabaseSync(path);
  const insert = db.prepare(
    "INSERT INTO jobs (queue, state, payload, max_attempts, run_at, created_at, finished_at) " +
      "VALUES ('q', ?, ?, 5, 0, 0, ?)",
  );
  db.exec("BEGIN");
  for (let i = 0; i < pending + done; i++) {
    const state = i < pending ? "pending" : "done";
    insert.run(state, JSON.stringify({ i, text: "x".repeat(200) }), state === "done" ? 1 : null);
  }
  db.exec("COMMIT");
  db.close();
}

async function backupEnd(backup: SqliteBackup): Promise<BackupStatus> {
  for (;;) {
    const status = (await backup.status())!;
    if (status.state !== "running") return status;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

Deno.test("SqliteBackup.start() writes a checked copy and reports its jobs by state", async () => {
  await using tmp = await tempDir("tegami-backup-");
  await database(`${tmp.path}/live.db`, 30, 70);
  const finished: BackupStatus[] = [];
  const backup = new SqliteBackup({
    path: `${tmp.path}/live.db`,
    dir: tmp.path,
    onFinished: (status) => finished.push(status),
  });
  const started = backup.start(`${tmp.path}/copy.db`);
  assert.equal(started.state, "running");
  const end = await backupEnd(backup);
  assert.equal(end.state, "done", end.error ?? "");
  assert.deepEqual(end.report?.counts, {
    blocked: 0,
    pending: 30,
    delayed: 0,
    leased: 0,
    done: 70,
    dead: 0,
    cancelled: 0,
  });
  assert.equal(end.report?.schema_version, MIGRATIONS.length);
  assert.equal(end.report?.bytes, (await Deno.stat(`${tmp.path}/copy.db`)).size);
  assert.deepEqual(finished.map((s) => s.state), ["done"]);
  assert.deepEqual((await verifyCopy(`${tmp.path}/copy.db`)).counts, end.report?.counts);
  const left = [...Deno.readDirSync(tmp.path)].map((e) => e.name).filter((n) => n.includes("tmp"));
  assert.deepEqual(left, []);
});

Deno.test("verifyCopy() refuses a copy with a corrupted page, naming integrity_check", async () => {
  await using tmp = await tempDir("tegami-backup-");
  await database(`${tmp.path}/live.db`, 500, 0);
  const backup = new SqliteBackup({ path: `${tmp.path}/live.db`, dir: tmp.path });
  backup.start(`${tmp.path}/copy.db`);
  assert.equal((await backupEnd(backup)).state, "done");
  // Scribble over a page in the middle of the jobs table (not the header, which is page 1).
  const file = await Deno.open(`${tmp.path}/copy.db`, { read: true, write: true });
  const size = (await file.stat()).size;
  await file.seek(Math.floor(size / 2 / 4096) * 4096 + 100, Deno.SeekMode.Start);
  await file.write(new Uint8Array(600).fill(0x5a));
  file.close();
  await assert.rejects(
    verifyCopy(`${tmp.path}/copy.db`),
    (error: Error) =>
      error instanceof CopyCheckError && /integrity_check|malformed/.test(error.message),
  );
});

Deno.test("verifyCopy() refuses a file that is not SQLite, and one that is not tegami's", async () => {
  await using tmp = await tempDir("tegami-backup-");
  await Deno.writeTextFile(`${tmp.path}/notes.db`, "these are not the jobs you are looking for\n");
  await assert.rejects(verifyCopy(`${tmp.path}/notes.db`), /not a SQLite database/);
  const other = new DatabaseSync(`${tmp.path}/other.db`);
  other.exec("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('hi')");
  other.close();
  await assert.rejects(verifyCopy(`${tmp.path}/other.db`), /not a tegami database/);
  await assert.rejects(verifyCopy(`${tmp.path}/missing.db`), /cannot open it/);
});

Deno.test("verifyCopy() refuses a copy whose schema is newer than this program's", async () => {
  await using tmp = await tempDir("tegami-backup-");
  await database(`${tmp.path}/live.db`, 1, 0);
  const db = new DatabaseSync(`${tmp.path}/live.db`);
  db.exec(`PRAGMA user_version = ${MIGRATIONS.length + 1}`);
  db.close();
  await assert.rejects(verifyCopy(`${tmp.path}/live.db`), /newer than this program's/);
});

Deno.test("SqliteBackup.start() refuses the database's own files and a second backup", async () => {
  await using tmp = await tempDir("tegami-backup-");
  await database(`${tmp.path}/live.db`, 1, 0);
  const backup = new SqliteBackup({ path: `${tmp.path}/live.db`, dir: tmp.path });
  for (const target of [`${tmp.path}/live.db`, "/etc/x.db", "../x.db", `${tmp.path}/none/x.db`]) {
    assert.throws(() => backup.start(target), { code: "validation_failed" }, target);
  }
  backup.start(`${tmp.path}/a.db`);
  assert.throws(() => backup.start(`${tmp.path}/b.db`), { code: "conflict" });
  await backupEnd(backup);
  await backup.close();
  assert.throws(() => backup.start(`${tmp.path}/c.db`), { code: "unavailable" });
});

Deno.test("a backup keeps the event loop answering while its VACUUM INTO runs", async () => {
  await using tmp = await tempDir("tegami-backup-");
  // Large enough that a VACUUM INTO on this thread would hold it for far longer than the bound.
  await database(`${tmp.path}/live.db`, 50_000, 150_000);
  const store = SqliteStore.open({ path: `${tmp.path}/live.db`, sync: "full", policy });
  try {
    const backup = new SqliteBackup({ path: `${tmp.path}/live.db`, dir: tmp.path });
    let worst = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last);
      last = now;
    }, 2);
    const began = performance.now();
    backup.start(`${tmp.path}/copy.db`);
    let writes = 0;
    let status: BackupStatus;
    while ((status = (await backup.status())!).state === "running") {
      await store.probeWritable(); // the store keeps committing meanwhile
      writes++;
    }
    const took = performance.now() - began;
    clearInterval(timer);
    assert.equal(status.state, "done", status.error ?? "");
    assert.ok(writes > 0, "the store committed while the backup ran");
    // The copy took a while; the loop never stood still for more than a fraction of it.
    assert.ok(worst < Math.max(150, took / 3), `worst gap ${worst} ms over ${took} ms`);
  } finally {
    await store.close();
  }
});
