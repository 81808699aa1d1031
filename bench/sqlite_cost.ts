/**
 * What SQLite alone costs per job on this machine, in CPU and in bytes written: the store's own
 * statements (`prepareStatements`) on a database opened as the server opens it (`openDatabase`:
 * its pragmas, migrations and checkpoint policy), with no server and no network. Each transaction
 * is one W1 commit in miniature: it inserts a batch of jobs, claims a batch (one `claimAll`) and
 * acks the batch the previous transaction claimed (`ackMany`), so every job passes through three
 * commits, as in W1. After each commit the write-ahead log is `fdatasync`ed, untimed, as the
 * server does before answering, so the bytes are those a disk sees (`write_bytes` of
 * `/proc/self/io`: each commit's frames, whole pages, and the page of the log the previous commit
 * ended in). Then the retention sweep deletes the done jobs (`sweepDone`, chunks of
 * `MAINTENANCE_BATCH`), and a last checkpoint writes back what the log still holds.
 *
 *     deno run -A bench/sqlite_cost.ts [--jobs N] [--batch N] [--page-size N[,N…]] [--rounds N]
 *       [--groups N] [--payload-bytes N]
 *
 * `--page-size 4096,1024` compares page sizes: `--rounds` (default 3) runs of each, interleaved,
 * keeping each part's fastest, and the least CPU time the process used (time on a core, which a
 * machine busy with other work inflates less than a part's wall time). `--groups N` spreads the jobs over N ordering groups (the group
 * tracking on, as after a queue's first grouped job) and leases them as a grouped claim does
 * (`claimIds`, on the oldest grouped jobs); `--payload-bytes N` sizes each payload (default 100).
 *
 * Added to the runtime floor's per-job CPU, the CPU bounds what a single-threaded server on SQLite
 * can do; the bytes are the floor of what a server writes per job at that commit size.
 *
 * @module
 */

import process from "node:process";
import { parseArgs } from "node:util";
import { MAINTENANCE_BATCH } from "../lib/core/limits.ts";
import { GROUP_TRACKING } from "../lib/store/sqlite/sqlite_schema.ts";
import { DEFAULT_PAGE_SIZE, openDatabase } from "../lib/store/sqlite/sqlite_open.ts";
import { prepareStatements } from "../lib/store/sqlite/sqlite_statements.ts";
import { INSERT_COLUMNS } from "../lib/store/sqlite/job_insert.ts";
import { describeWalPages, type WalPages, walPages } from "./wal_pages.ts";

const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "64000" },
    batch: { type: "string", default: "32" },
    groups: { type: "string", default: "0" },
    rounds: { type: "string", default: "3" },
    "page-size": { type: "string", default: String(DEFAULT_PAGE_SIZE) },
    "payload-bytes": { type: "string", default: "100" },
  },
});
const jobs = Number(values.jobs);
const batch = Number(values.batch);
const groups = Number(values.groups);
const rounds = Number(values.rounds);
const pageSizes = values["page-size"].split(",").map(Number);
const payload = JSON.stringify({
  n: 1,
  pad: "x".repeat(Math.max(0, Number(values["payload-bytes"]) - 20)),
});

const PARTS = ["insert", "claim", "ack", "commit", "sweep"] as const;
type Part = typeof PARTS[number];

/** One run's CPU (ms) per part, and its bytes written: by the jobs' commits, the sweep, the end. */
interface Run {
  ms: Record<Part, number>;
  /** CPU time (ms) this process spent on a core in the jobs' commits and in the sweep. */
  cpu: { jobs: number; sweep: number };
  bytes: { jobs: number; sweep: number; checkpoint: number };
  /** The commits of the jobs (insert, claim, ack), and the frames they wrote. */
  jobCommits: { commits: number; frames: number };
  /** The sweep's commits, and their frames. */
  sweepCommits: { commits: number; frames: number };
  /** The pages of the jobs' last commits by b-tree (those since the last checkpoint). */
  trees: WalPages;
  /** The pages of the sweep's commits by b-tree. */
  sweepTrees: WalPages;
}

/** CPU time this process has used so far (user and system, every thread), in ms. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Bytes this process has caused to be written to storage so far. */
function writtenBytes(): number {
  const io = Deno.readTextFileSync("/proc/self/io");
  return Number(io.match(/^write_bytes:\s+(\d+)/m)![1]);
}

/** The frames in the write-ahead log (`mxFrame` of the wal-index header, in `-shm`). */
function walFrames(shm: Deno.FsFile): number {
  const header = new Uint8Array(48);
  shm.seekSync(0, Deno.SeekMode.Start);
  shm.readSync(header);
  return new DataView(header.buffer).getUint32(16, true);
}

async function once(pageSize: number): Promise<Run> {
  const dir = Deno.makeTempDirSync({ prefix: "tegami-sqlite-cost-" });
  const path = `${dir}/cost.db`;
  const { db, lock } = openDatabase(path, pageSize);
  if (groups > 0) db.exec(GROUP_TRACKING);
  const s = prepareStatements(db, { n: 0 });
  // The grouped claim's candidates, simplified: the oldest grouped jobs, every group open.
  const groupedIds = db.prepare(
    `SELECT id FROM jobs WHERE queue = 'q' AND state = 'pending' AND grp IS NOT NULL
     ORDER BY priority DESC, id LIMIT ?`,
  ) as unknown as { all(n: number): { id: number }[] };
  const ms = Object.fromEntries(PARTS.map((p) => [p, 0])) as Record<Part, number>;
  const time = <T>(part: Part, work: () => T): T => {
    const started = performance.now();
    const out = work();
    ms[part] += performance.now() - started;
    return out;
  };
  const wal = Deno.openSync(`${path}-wal`, { read: true });
  const shm = Deno.openSync(`${path}-shm`, { read: true });
  let commits = 0;
  let frames = 0;
  const commit = () => {
    const before = walFrames(shm);
    time("commit", () => s.commit.run());
    const after = walFrames(shm);
    // A log restarted at this transaction's start (a checkpoint copied it all) holds only its
    // frames.
    frames += after >= before ? after - before : after;
    commits++;
    wal.syncDataSync();
  };
  let inserted = 0;
  let now = Date.UTC(2026, 0, 1);
  let claimed: { id: number; token: string }[] = [];
  const started = writtenBytes();
  const cpuStarted = cpuMs();
  // Each job is inserted by one commit, claimed by the next and acked by the one after.
  for (let done = 0; done < jobs + 2 * batch; done += batch) {
    now += 5;
    s.begin.run();
    if (done < jobs) {
      const rows: (string | number | null)[] = [];
      for (let i = 0; i < batch; i++) {
        const grp = groups > 0 ? `g${inserted % groups}` : null;
        inserted++;
        const row: Record<(typeof INSERT_COLUMNS)[number], string | number | null> = {
          queue: "q",
          state: "pending",
          priority: 0,
          key: null,
          grp,
          payload,
          max_attempts: 5,
          run_at: now,
          lease_ms: null,
          backoff_base_ms: null,
          backoff_max_ms: null,
          created_at: now,
          key_expires_at: null,
          attributes: null,
        };
        for (const column of INSERT_COLUMNS) rows.push(row[column]);
      }
      time("insert", () => s.insertJobs.insert(rows));
    }
    // The acks of the jobs the previous transaction claimed, then the claim of the next ones.
    if (claimed.length > 0) {
      const acks = claimed.flatMap((job) => [job.id, job.token, null, now]);
      time("ack", () => s.ackMany.run(acks, () => {}));
    }
    claimed = done === 0 ? [] : time("claim", () => {
      const rows = groups > 0
        ? s.claimIds.all(null, now, 30_000, JSON.stringify(groupedIds.all(batch).map((r) => r.id)))
        : s.claimAll.all(null, now, 30_000, "q", batch);
      return rows.map((row) => ({ id: row.id, token: row.lease_token! }));
    });
    commit();
  }
  const jobsCpu = cpuMs() - cpuStarted;
  const jobsWritten = writtenBytes() - started;
  const jobCommits = { commits, frames };
  // Each read of the log copies the files: done between the counts, not in them.
  const trees = await walPages(path);
  // The log's pages written back now, so that what follows holds only the sweep's.
  let checkpointed = writtenBytes();
  db.exec("PRAGMA wal_checkpoint(RESTART)");
  checkpointed = writtenBytes() - checkpointed;
  commits = frames = 0;
  const sweepFrom = writtenBytes();
  const sweepCpuFrom = cpuMs();
  for (let n = -1; n !== 0;) {
    s.begin.run();
    n = time("sweep", () => s.sweepDone.all("q", now + 1, MAINTENANCE_BATCH).length);
    commit();
  }
  const sweepCpu = cpuMs() - sweepCpuFrom;
  const sweepWritten = writtenBytes() - sweepFrom;
  const sweepTrees = await walPages(path);
  const last = writtenBytes();
  db.exec("PRAGMA wal_checkpoint(PASSIVE)");
  checkpointed += writtenBytes() - last;
  wal.close();
  shm.close();
  db.close();
  lock?.close();
  Deno.removeSync(dir, { recursive: true });
  return {
    ms,
    cpu: { jobs: jobsCpu, sweep: sweepCpu },
    bytes: { jobs: jobsWritten, sweep: sweepWritten, checkpoint: checkpointed },
    jobCommits,
    sweepCommits: { commits, frames },
    trees,
    sweepTrees,
  };
}

const best = new Map<number, Run>();
for (let round = 0; round < rounds; round++) {
  for (const pageSize of pageSizes) {
    const run = await once(pageSize);
    const kept = best.get(pageSize);
    if (kept === undefined) {
      best.set(pageSize, run);
      continue;
    }
    for (const part of PARTS) kept.ms[part] = Math.min(kept.ms[part], run.ms[part]);
    kept.cpu.jobs = Math.min(kept.cpu.jobs, run.cpu.jobs);
    kept.cpu.sweep = Math.min(kept.cpu.sweep, run.cpu.sweep);
  }
}

const us = (ms: number) => (1000 * ms / jobs).toFixed(1).padStart(7);
const kb = (bytes: number) => (bytes / jobs / 1024).toFixed(3).padStart(7);
console.log(
  `SQLite per job (${jobs} jobs, ${batch} inserted, claimed and acked per commit${
    groups > 0 ? `, over ${groups} groups` : ""
  }; CPU the fastest of ${rounds} interleaved runs):`,
);
console.log(`${"page size".padEnd(22)}${pageSizes.map((p) => String(p).padStart(9)).join("")}`);
const line = (label: string, cell: (run: Run) => string) =>
  console.log(
    `${label.padEnd(22)}${pageSizes.map((p) => cell(best.get(p)!).padStart(9)).join("")}`,
  );
for (const part of PARTS) line(`µs ${part}`, (r) => us(r.ms[part]));
line("µs total", (r) => us(PARTS.reduce((t, p) => t + r.ms[p], 0)));
// On-core time is what a busy machine does not inflate; it includes this bench's own work (the
// rows it builds, its fsyncs and reads of the log's index), the same for every page size.
line("µs CPU, jobs' commits", (r) => us(r.cpu.jobs));
line("µs CPU, sweep", (r) => us(r.cpu.sweep));
line("frames per commit", (r) => (r.jobCommits.frames / r.jobCommits.commits).toFixed(1));
line("frames per sweep", (r) => (r.sweepCommits.frames / r.sweepCommits.commits).toFixed(1));
line("KB written: jobs", (r) => kb(r.bytes.jobs));
line("KB written: sweep", (r) => kb(r.bytes.sweep));
line("KB written: checkpoints", (r) => kb(r.bytes.checkpoint));
line("KB written in all", (r) => kb(r.bytes.jobs + r.bytes.sweep + r.bytes.checkpoint));
for (const pageSize of pageSizes) {
  const run = best.get(pageSize)!;
  console.log(`${pageSize}, the jobs: ${describeWalPages(run.trees)}`);
  console.log(`${pageSize}, the sweep: ${describeWalPages(run.sweepTrees)}`);
}
