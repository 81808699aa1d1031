/**
 * The SQLite store on `node:sqlite`: WAL, `synchronous=FULL` by default, every write inside a
 * group-committed `BEGIN IMMEDIATE` transaction, statements prepared once.
 *
 * One server per database file: a sidecar `PATH.lock` is held with an exclusive `flock` for the
 * life of the store, so a second server on the same file fails at once with a clear message.
 *
 * Per-queue counts are kept in memory (loaded once at startup, changed only after a commit), so
 * stats never scan the table; the store is the only writer, which the lock guarantees.
 *
 * @module
 */

import { attempted, type JobRow, rowToJob } from "../job_row.ts";
import type { DatabaseSync, SQLInputValue, StatementResultingChanges } from "node:sqlite";
import { setImmediate } from "node:timers";
import type { CountedStatement, StatementCount } from "./counted_statement.ts";
import { jobNotFound, leaseLost, TegamiError } from "../../core/errors.ts";
import type { Delivery, Enqueued, Job, JobState, NewJob } from "../../core/job.ts";
import { MAINTENANCE_BATCH } from "../../core/limits.ts";
import {
  afterLeaseEnd,
  afterNack,
  cancelRemoves,
  claimedCount,
  claimTotal,
  deletedAtAck,
  type DoneRetention,
  extendLeaseMs,
  type HandOvers,
  holdsLease,
  initialState,
  type LeaseEndCause,
  leaseEndDue,
  type LifecyclePolicy,
  type NackRequest,
  nextLeaseDeadline,
  runNowPromotes,
  type Transition,
} from "../../core/lifecycle.ts";
import {
  type CommitObserver,
  type Committer,
  type CommitterFactory,
  GroupCommit,
  type Transactor,
} from "../group_commit.ts";
import {
  keyExpiresAt,
  type KeyHolder,
  planEnqueue,
  type PlannedChange,
  type PlannedInsert,
} from "../../core/dedup.ts";
import { GROUP_TRACKING } from "./sqlite_schema.ts";
import { SqliteGroups } from "./sqlite_groups.ts";
import { earliest } from "../group_row.ts";
import type { GroupSettings, GroupState } from "../../core/group_settings.ts";
import { DEFAULT_PAGE_SIZE, openDatabase } from "./sqlite_open.ts";
import {
  isDefaultSettings,
  type QueueSettings,
  type ResolvedJob,
  withQueueDefaults,
} from "../../core/queue_settings.ts";
import { rowToSettings, type SettingsRow, settingsToRow, settingsValues } from "../settings_row.ts";
import { SqliteSchedules } from "./sqlite_schedules.ts";
import { QueueMirror } from "./queue_mirror.ts";
import { queueCounts } from "../queue_stats.ts";
import { prepareStatements, sqliteFileSizes, type SqliteStatements } from "./sqlite_statements.ts";
import { SqliteClaims } from "./sqlite_claims.ts";
import { findJobsIn } from "./sqlite_find.ts";
import { SqliteFlows } from "./sqlite_flows.ts";
import {
  type Flow,
  type FlowCreated,
  type FlowSummary,
  type NewFlow,
  type NewFlowNode,
  notInFlow,
} from "../../core/flow.ts";
import type { FoundJobs, JobFilter } from "../../core/job_filter.ts";
import type { Schedule, ScheduleDefinition } from "../../core/schedule.ts";
import { WalSync } from "./wal_sync.ts";
import { type Bucket, claimCap } from "../../core/rate_bucket.ts";
import {
  type AckResult,
  type CancelResult,
  type ClaimWant,
  type CommitStats,
  copyCommitStats,
  countCommit,
  type DeadJobs,
  emptyCommitStats,
  type EndedLease,
  type FlowCancelled,
  type GroupCounts,
  type JobPage,
  type KnownQueues,
  type LeaseRef,
  LocalPeers,
  type NackResult,
  type Peers,
  type QueueCounts,
  type Released,
  type RequeueResult,
  type RunNowResult,
  type ScheduleCounts,
  type ScheduleTick,
  type Store,
  type StoreCapabilities,
  type TickResult,
} from "../store.ts";

/** Options of {@linkcode SqliteStore.open}. */
export interface SqliteStoreOptions {
  /** The database file, or `:memory:`. */
  path: string;
  /** `full` survives power loss; `normal` may lose the last commits on power loss. @default "full" */
  sync?: "full" | "normal";
  /**
   * The page size of the database file if this store creates it (a power of two from 512 to
   * 65536); a file that exists keeps its own. @default {@linkcode DEFAULT_PAGE_SIZE}
   */
  pageSize?: number;
  /** Policy applied inside transactions. */
  policy: LifecyclePolicy;
  /** Sees every commit (batch size, duration, failure). */
  onCommit?: CommitObserver;
  /**
   * Hears the duration in milliseconds of each fsync of the write-ahead log (`sync: "full"`),
   * which follows a commit and is not part of the duration `onCommit` hears.
   */
  onWalSync?: (ms: number) => void;
  /**
   * Batches writes into transactions; resolves each write once it is committed.
   * @default a {@linkcode GroupCommit}
   */
  committer?: CommitterFactory;
}

/** The job holding a key, as the enqueue reads it. */
interface KeyHolderRow extends KeyHolder {
  id: number;
}
/** An ack waiting for its transaction. */
interface PendingAck {
  id: number;
  token: string;
  result: string | null;
  now: number;
  /** What decides whether the ack deletes the job rather than keep it done, if anything. */
  retention: DoneRetention | undefined;
  /** The job's queue, as the lease taken here noted it (see `#queueOf`), if it was. */
  queue: string | undefined;
  /** Whether the run's statements deleted the job (set when they settled the whole run). */
  dropped: boolean;
}

/**
 * Acks submitted one after another, no other write between them, and so run one after another
 * in one transaction: the first to run settles them all at once when it can (see #ackOf).
 */
interface AckRun {
  kind: "ack";
  acks: PendingAck[];
  /** The committer's waiting operations right after the run's last ack was submitted. */
  waitingAfter: number;
  /** The transaction (#transactions) in which the run was last tried, or -1. */
  triedIn: number;
  /** Whether that try settled every ack of the run. */
  settledAll: boolean;
}

/** An enqueue waiting in an {@linkcode InsertRun}; `out` is its answer once its rows are in. */
interface PendingEnqueue {
  queue: string;
  jobs: NewJob[];
  now: number;
  out: Enqueued[];
}

/**
 * Enqueues submitted one after another, no other write between them and none with a dedup key or
 * a schedule's tick, and so run one after another in one transaction: the first to run inserts
 * the rows of them all in as few statements as their number allows (see #enqueueInRun), in the
 * order they were submitted, so ids come out as they would one enqueue at a time. One job per
 * request, as most producers send them, then costs a share of a many-row `INSERT` instead of a
 * statement of its own.
 */
interface InsertRun {
  kind: "insert";
  enqueues: PendingEnqueue[];
  /** The committer's waiting operations right after the run's last enqueue was submitted. */
  waitingAfter: number;
  /** The transaction (#transactions) in which the run's rows were last inserted, or -1. */
  triedIn: number;
}

/**
 * A run of writes still open to the next one of its kind. At most one is open: the last write
 * submitted belongs to it, since any other write, and the flush that takes the run, ends it.
 */
type OpenRun = AckRun | InsertRun;

/** States a job never leaves (but by removal, or a requeue of the dead). */
const FINISHED: ReadonlySet<JobState> = new Set(["done", "cancelled"]);

/** Without fsyncs to watch (`sync: "normal"`), a write counts as idle this long after a flush. */
const IDLE_AFTER_MS = 1;

/** Most entries in the leased-queue cache before it starts over. */
const LEASED_QUEUES_CAP = 100_000;

export { DEFAULT_PAGE_SIZE };

/** How many queues one sweep transaction visits at most. */
const SWEEP_QUEUES = 500;

/** The SQLite implementation of {@linkcode Store}. */
export class SqliteStore implements Store {
  readonly #db: DatabaseSync;
  readonly #lock: Deno.FsFile | null;
  readonly #policy: LifecyclePolicy;
  readonly #path: string;
  /** fsyncs the WAL before answers when `sync` is `full` on a file; null otherwise. */
  readonly #walSync: WalSync | null;
  #lastFlushAt = 0;
  readonly #commits: Committer;
  /** Its queues' counts, pauses and settings, as of the last commit (see queue_mirror.ts). */
  readonly #queues = new QueueMirror();
  /** The queue of each job leased by this process, by id (see `#queueOf`). */
  readonly #leasedQueues = new Map<number, string>();
  /**
   * Queues that may hold grouped jobs that are not finished: their claims go through the
   * groups (the slower path); every other queue's claim is one statement. A queue joins when a
   * grouped job is enqueued (inside that transaction, before any claim that could miss it) or
   * at open; it stays until the store closes.
   */
  readonly #grouped = new Set<string>();
  /**
   * Whether the group tracking (GROUP_TRACKING) is known to exist: committed (`#groupsTracked`),
   * or seen or created in the open transaction, until an undo or a rollback could take it away
   * (`#groupsTrackedNow`), so that a grouped enqueue does not ask `sqlite_master` every time.
   */
  #groupsTracked = false;
  #groupsTrackedNow = false;
  /** Queues whose last claim its rate held back, and when their next token comes. */
  readonly #heldUntil = new Map<string, number>();

  /** SQLite's change counter when the open transaction began. */
  #changesAtBegin = 0;
  /** Transactions begun, retries included: tells an ack run whether it was tried in this one. */
  #transactions = 0;
  /** The run the last write submitted belongs to, or null (see OpenRun). */
  #run: OpenRun | null = null;
  /** Set when close() starts: new writes are refused from then on. */
  #closed = false;
  /** Set once the database is closed: reads are refused from then on. */
  #dbClosed = false;
  #closing: Promise<void> | null = null;
  readonly #stats: CommitStats = emptyCommitStats();
  readonly #statements: SqliteStatements;
  /** Leases jobs inside a claim's transaction. */
  readonly #claims: SqliteClaims;
  readonly #schedules: SqliteSchedules;
  /** Flows: their jobs, edges and releases. */
  readonly #flows: SqliteFlows;
  /** Per-group settings and rate buckets. */
  readonly #groups: SqliteGroups;
  /** Queues whose last claim left groups held by their rates, and when the first gets a token. */
  readonly #groupsHeldUntil = new Map<string, number>();
  /** Told what a commit released (see `Store.onReleased`). */
  #onReleased: ((released: Released) => void) | null = null;
  /** SQL statements run so far (the store's own; SQLite's internal ones are not counted). */
  readonly #statementsRun: StatementCount = { n: 0 };
  /** Authorizer calls: SQLite makes them only while it compiles a statement. */
  #compileChecks = 0;
  /** The engine and its version. */
  readonly engine: string;
  /** One server per file, in local files. */
  readonly capabilities: StoreCapabilities = { shared: false, localFiles: true };
  /** Nobody else writes this file: nothing to hear from, nobody to tell. */
  readonly peers: Peers = new LocalPeers();

  private constructor(
    db: DatabaseSync,
    lock: Deno.FsFile | null,
    options: SqliteStoreOptions,
  ) {
    this.#db = db;
    this.#lock = lock;
    this.#policy = options.policy;
    this.#path = options.path;
    this.#walSync = options.sync === "normal" || options.path === ":memory:"
      ? null
      : new WalSync(`${options.path}-wal`, options.onWalSync);
    const observer = options.onCommit;
    db.setAuthorizer(() => {
      this.#compileChecks++;
      return 0; // SQLITE_OK: the store only counts
    });
    this.#statements = prepareStatements(db, this.#statementsRun);
    this.#groups = new SqliteGroups(db, this.#statementsRun);
    this.#claims = new SqliteClaims(
      this.#statements,
      this.#groups,
      this.#queues,
      this.#policy,
      (id, queue) => this.#rememberLeased(id, queue),
    );
    this.#schedules = new SqliteSchedules(db, this.#statementsRun);
    this.#flows = new SqliteFlows(db, this.#statementsRun, this.#queues, {
      trackGroups: () => this.#trackGroups(),
      grouped: (queue) => this.#grouped.add(queue),
    });
    this.engine = `SQLite ${(db.prepare("SELECT sqlite_version() AS v").get() as { v: string }).v}`;
    const counted: CommitObserver = (size, ms, error) => {
      if (error === null) countCommit(this.#stats, size, ms);
      observer?.(size, ms, error);
    };
    const schedule = (flush: () => void) => this.#schedule(flush);
    this.#commits = options.committer?.(this.#transactor(), counted, schedule) ??
      new GroupCommit(this.#transactor(), counted, { schedule });
    for (
      const row of this.#statements.countAll.all() as {
        queue: string;
        state: JobState;
        n: number;
        grouped: number;
      }[]
    ) {
      this.#queues.loadCount(row.queue, row.state, row.n);
      if (row.grouped > 0 && !FINISHED.has(row.state)) this.#grouped.add(row.queue);
    }
    for (const row of this.#statements.pausedQueues.all() as { name: string }[]) {
      this.#queues.setPaused(row.name, true);
    }
    for (
      const row of this.#statements.allSettings.all() as unknown as (SettingsRow & {
        name: string;
      })[]
    ) {
      this.#queues.loadSettings(row.name, rowToSettings(row));
    }
    // From here on, SQLite's scratch space is memory. What it holds now is the undo record of a
    // savepoint (an ack run's settle, a guarded operation) or of one statement inside a
    // transaction: the pages it changed, at most a few megabytes (a sweep's chunk), gone at its
    // end. What still sorts from here sorts a bounded few rows: a page of leased jobs, a grouped
    // claim's candidates (sqlite_store_test.ts checks every plan).
    // In temp files, every undo record over 64 KiB would be written to a new, deleted file at
    // every commit that had one (docs/performance.md, "Disk per job").
    db.exec("PRAGMA temp_store = MEMORY");
  }

  /**
   * Opens (creating if needed) and migrates the database, taking the one-server lock.
   * Throws a plain `Error` with a one-line reason when the file is held by another server.
   */
  static open(options: SqliteStoreOptions): SqliteStore {
    const { db, lock } = openDatabase(options.path, options.pageSize ?? DEFAULT_PAGE_SIZE);
    return new SqliteStore(db, lock, options);
  }

  /** The transaction hooks group commit drives; counts change only after COMMIT. */
  #transactor(): Transactor {
    const s = this.#statements;
    return {
      begin: () => {
        // Operations queued before an fsync failed are refused with the rest (see #write).
        const failed = this.#walSync?.failure;
        if (failed) throw failed;
        s.begin.run();
        this.#transactions++;
        this.#changesAtBegin = this.#totalChanges();
        this.#groupsTrackedNow = false;
      },
      commit: () => {
        s.commit.run();
        // A transaction that changed nothing (an empty claim, a refused ack) needs no fsync of
        // its own: its callers still wait for every earlier commit to be durable.
        if (this.#totalChanges() !== this.#changesAtBegin) this.#walSync?.committed();
        if (this.#groupsTrackedNow) this.#groupsTracked = true;
        this.#queues.commit();
        const released = this.#flows.takeNews();
        if (released !== null) this.#onReleased?.(released);
      },
      rollback: () => {
        this.#queues.rollback();
        this.#groups.forget();
        this.#flows.dropNews();
        this.#groupsTrackedNow = false;
        if (!this.#db.isTransaction) return;
        try {
          s.rollback.run();
        } catch {
          // The transaction may already be gone (SQLite rolls back on some I/O errors).
        }
      },
      mark: () => {
        this.#queues.mark();
        this.#flows.mark();
        s.savepoint.run();
      },
      release: () => s.releaseSavepoint.run(),
      undo: () => {
        s.rollbackSavepoint.run();
        s.releaseSavepoint.run();
        this.#queues.undo();
        this.#flows.undo();
        this.#groups.forget();
        // The undone operation may have been the one that created the group tracking.
        this.#groupsTrackedNow = false;
      },
    };
  }

  // ---- Store ----

  enqueue(queue: string, jobs: NewJob[], now: number, tick?: ScheduleTick): Promise<Enqueued[]> {
    if (tick === undefined && jobs.every((job) => job.key === null)) {
      return this.#enqueueInRun(queue, jobs, now);
    }
    return this.#write(() => {
      if (tick !== undefined) this.#schedules.take(tick);
      const s = this.#statements;
      if (jobs.some((job) => job.group != null)) this.#trackGroups();
      const settings = this.#queues.settingsOf(queue);
      const resolved = jobs.map((job) => withQueueDefaults(job, settings));
      const holders: (KeyHolderRow & { key: string })[] = [];
      for (const key of new Set(resolved.flatMap((job) => job.key === null ? [] : [job.key]))) {
        const holder = s.findByKey.get(queue, key) as KeyHolderRow | undefined;
        if (holder !== undefined) holders.push({ ...holder, key });
      }
      const plan = planEnqueue(holders, resolved, now);
      const stateBefore = new Map(holders.map((holder) => [holder.id, holder.state]));
      for (const id of plan.released) s.releaseKey.run(id);
      for (const change of plan.changed) {
        const before = stateBefore.get(change.id)!;
        this.#applyChange(change);
        if (change.state !== before) this.#queues.move(queue, before, change.state);
      }
      const values: SQLInputValue[] = [];
      const fresh = plan.inserts.map((planned) =>
        this.#newRow(queue, planned.job, now, values, planned)
      );
      if (fresh.length > 0) this.#insertRows(values, fresh);
      const out = plan.answers.map((a): Enqueued => ({
        id: a.slot.id ?? fresh[a.slot.insert!].id,
        deduplicated: a.duplicate !== null,
        duplicate: a.duplicate,
        state: a.state,
        run_at: a.run_at,
      }));
      if (tick !== undefined) this.#schedules.record(tick, out);
      return out;
    });
  }

  /**
   * An enqueue of jobs without keys, joined to the run of such enqueues submitted just before it
   * (see InsertRun); a run ends at any other write and at the flush that takes it.
   */
  #enqueueInRun(queue: string, jobs: NewJob[], now: number): Promise<Enqueued[]> {
    const refused = this.#writeRefusal();
    if (refused !== null) return Promise.reject(refused);
    const run = this.#joinRun<InsertRun>(
      "insert",
      () => ({ kind: "insert", enqueues: [], waitingAfter: 0, triedIn: -1 }),
    );
    const enqueue: PendingEnqueue = { queue, jobs, now, out: [] };
    run.enqueues.push(enqueue);
    const stored = this.#submit(() => {
      if (run.triedIn !== this.#transactions) {
        run.triedIn = this.#transactions;
        this.#insertAll(run.enqueues);
      }
      return enqueue.out;
    });
    run.waitingAfter = this.#commits.waiting;
    return stored;
  }

  /**
   * The open run if it is of `kind` and nothing was submitted since its last write (a flush
   * empties the committer's queue, so a run it took is never joined), else `fresh()`; either way
   * it becomes the open run. The caller records `waitingAfter` once its write is submitted.
   */
  #joinRun<R extends OpenRun>(kind: R["kind"], fresh: () => R): R {
    const open = this.#run;
    const run = open !== null && open.kind === kind && open.waitingAfter === this.#commits.waiting
      ? open as R
      : fresh();
    this.#run = run;
    return run;
  }

  /** Inserts the jobs of every one of `enqueues`, in order, and makes each one's answer. */
  #insertAll(enqueues: readonly PendingEnqueue[]): void {
    if (enqueues.some((e) => e.jobs.some((job) => job.group != null))) this.#trackGroups();
    const values: SQLInputValue[] = [];
    const fresh: Enqueued[] = [];
    for (const enqueue of enqueues) {
      const settings = this.#queues.settingsOf(enqueue.queue);
      enqueue.out = new Array(enqueue.jobs.length);
      for (let i = 0; i < enqueue.jobs.length; i++) {
        const job = withQueueDefaults(enqueue.jobs[i], settings);
        enqueue.out[i] = this.#newRow(enqueue.queue, job, enqueue.now, values);
        fresh.push(enqueue.out[i]);
      }
    }
    if (fresh.length > 0) this.#insertRows(values, fresh);
  }

  /** Inserts the rows in `values` and gives each of `fresh`, their answers in order, its id. */
  #insertRows(values: SQLInputValue[], fresh: Enqueued[]): void {
    const first = this.#statements.insertJobs.insert(values);
    for (let k = 0; k < fresh.length; k++) fresh[k].id = first + k;
  }

  /**
   * Adds the row of new job `job`, its queue's defaults already applied, to `values` and takes
   * note of it; answers its {@linkcode Enqueued}, whose id is set once the row is in.
   */
  #newRow(
    queue: string,
    job: ResolvedJob,
    now: number,
    values: SQLInputValue[],
    planned?: PlannedInsert,
  ): Enqueued {
    const state = planned?.state ?? initialState(job.run_at, now);
    if (job.group != null) this.#grouped.add(queue);
    const runAt = planned?.run_at ?? (state === "delayed" ? job.run_at : now);
    values.push(
      queue,
      state,
      job.priority,
      job.key,
      job.group ?? null,
      job.payload,
      job.max_attempts,
      runAt,
      job.lease_ms,
      job.backoff?.base_ms ?? null,
      job.backoff?.max_ms ?? null,
      now,
      planned === undefined ? keyExpiresAt(job, now) : planned.key_expires_at,
      job.attributes ?? null,
    );
    this.#queues.move(queue, null, state);
    return { id: 0, deduplicated: false, duplicate: null, state, run_at: runAt };
  }

  /**
   * Makes sure the group tracking exists (see GROUP_TRACKING in sqlite_schema.ts), inside the
   * transaction of the enqueue about to insert a grouped job: created then, it counts that job
   * and every later one; rolled back with it, it is created again by the next.
   */
  #trackGroups(): void {
    if (this.#groupsTracked || this.#groupsTrackedNow) return;
    if (this.#statements.groupTracking.get() === undefined) this.#db.exec(GROUP_TRACKING);
    this.#groupsTrackedNow = true;
  }

  claim(queue: string, max: number, lease_ms: number | null, now: number): Promise<Delivery[]> {
    return this.claimFair(queue, [{ max, lease_ms }], now).then((lists) => lists[0]);
  }

  claimFair(queue: string, wants: ClaimWant[], now: number): Promise<Delivery[][]> {
    return this.#write(() => {
      const out: Delivery[][] = wants.map(() => []);
      if (this.#queues.isPaused(queue)) return out;
      const total = claimTotal(wants);
      if (total === 0) return out;
      const settings = this.#queues.settingsOf(queue);
      if (settings.concurrency !== null || settings.rate !== null) {
        return this.#claimLimited(queue, wants, total, settings, now);
      }
      this.#heldUntil.delete(queue);
      const lists = this.#grouped.has(queue)
        ? this.#claimGrouped(queue, wants, total, now)
        : this.#claims.plain(queue, wants, total, now);
      this.#flows.attach(lists);
      return lists;
    });
  }

  /** When the last claim of `queue` was held back by its rate, when the next token comes. */
  claimHeldUntil(queue: string): number | null {
    return earliest(this.#heldUntil.get(queue), this.#groupsHeldUntil.get(queue));
  }

  /**
   * The grouped claim, then when the first of the queue's groups that their rates hold gets its
   * next token (the broker offers the queue again then).
   */
  #claimGrouped(queue: string, wants: ClaimWant[], total: number, now: number): Delivery[][] {
    const lists = this.#claims.grouped(queue, wants, total, now);
    const next = this.#groups.summary(queue).rated ? this.#groups.nextToken(queue, now) : null;
    if (next === null) this.#groupsHeldUntil.delete(queue);
    else this.#groupsHeldUntil.set(queue, next);
    return lists;
  }

  /**
   * The claim of a queue with a concurrency or a rate: at most as many jobs as the queue's
   * free slots and the bucket's whole tokens, both read inside this transaction.
   */
  #claimLimited(
    queue: string,
    wants: ClaimWant[],
    total: number,
    settings: Readonly<QueueSettings>,
    now: number,
  ): Delivery[][] {
    const s = this.#statements;
    const leased = settings.concurrency === null ? 0 : this.#queues.leasedNow(queue);
    const bucket = settings.rate === null ? null : s.readBucket.get(queue) as Bucket | undefined;
    const { cap, tokens, heldUntil } = claimCap(settings, total, leased, bucket ?? null, now);
    if (heldUntil === null) this.#heldUntil.delete(queue);
    else this.#heldUntil.set(queue, heldUntil);
    if (cap <= 0) return wants.map(() => []);
    const out = this.#grouped.has(queue)
      ? this.#claimGrouped(queue, wants, cap, now)
      : this.#claims.plain(queue, wants, cap, now);
    if (tokens !== null) s.writeBucket.run(queue, tokens - claimedCount(out), now);
    return out;
  }

  /** The queue's groups, counted (no query for a queue that never had any). */
  #groupCounts(queue: string, now: number): GroupCounts {
    if (!this.#grouped.has(queue)) {
      return { waiting: 0, leased: 0, full: 0, rate_held: 0, top_held: [] };
    }
    return this.#groups.counts(queue, this.#groupLimit(queue), now);
  }

  /** The most jobs of one group leased at once in `queue`. */
  #groupLimit(queue: string): number {
    return this.#queues.settingsOf(queue).group_limit;
  }

  ack(
    id: number,
    token: string,
    result: string | null,
    now: number,
    retention?: DoneRetention,
  ): Promise<AckResult> {
    const refused = this.#writeRefusal();
    if (refused !== null) return Promise.reject(refused);
    // Acks submitted one after another join one run, settled together (see AckRun).
    const run = this.#joinRun<AckRun>(
      "ack",
      () => ({ kind: "ack", acks: [], triedIn: -1, settledAll: false, waitingAfter: 0 }),
    );
    const queue = retention === undefined ? undefined : this.#leasedQueues.get(id);
    const index = run.acks.push({ id, token, result, now, retention, queue, dropped: false }) - 1;
    const acked = this.#submit(() => this.#ackOf(run, index));
    run.waitingAfter = this.#commits.waiting;
    return acked;
  }

  /**
   * The ack at `index` of `run`, inside the transaction. The run's first to run tries to settle
   * the whole run in one statement per 64 acks; if that settles every one (the common case),
   * each ack only takes note of its own; else nothing of it is kept and each ack runs alone.
   */
  #ackOf(run: AckRun, index: number): AckResult {
    if (run.triedIn !== this.#transactions) {
      run.triedIn = this.#transactions;
      run.settledAll = run.acks.length > 1 && this.#settleAll(run.acks);
    }
    const ack = run.acks[index];
    const { id, token, result, now } = ack;
    const s = this.#statements;
    if (run.settledAll) return this.#acked(ack, ack.dropped);
    if (this.#drops(ack) && s.ackDelete.run(id, token, now).changes === 1) {
      return this.#acked(ack, true);
    }
    const changed = s.ack.run(result, now, id, token, now).changes;
    if (changed === 1) return this.#acked(ack, false);
    const job = this.#row(id);
    if (job.state === "done" && job.lease_token === token) {
      return { id, queue: job.queue, frees: false }; // a repeated ack
    }
    throw leaseLost(id, "ack");
  }

  /**
   * Acks every one of `acks` in few statements, or none of them (answers false): deletes those
   * that drop their job, then completes the others. A job to drop that stayed (one of a flow)
   * makes it none, as any ack that fails does.
   */
  #settleAll(acks: readonly PendingAck[]): boolean {
    const s = this.#statements;
    const dropped: SQLInputValue[] = [];
    const values: SQLInputValue[] = [];
    for (const ack of acks) {
      const { id, token, result, now } = ack;
      ack.dropped = this.#drops(ack);
      if (ack.dropped) dropped.push(id, token, now);
      else values.push(id, token, result, now);
    }
    s.savepointAcks.run();
    let all = true;
    const check = (n: number, info: StatementResultingChanges) => {
      if (info.changes !== n) all = false;
    };
    if (dropped.length > 0) s.ackDeleteMany.run(dropped, check);
    if (all && values.length > 0) s.ackMany.run(values, check);
    if (!all) s.rollbackAcks.run();
    s.releaseAcks.run();
    return all;
  }

  /**
   * Whether `ack` deletes its job rather than keep it done (core's deletedAtAck), asked inside
   * the transaction. A job whose lease was not taken here since the start is kept, for the sweep.
   */
  #drops(ack: PendingAck): boolean {
    return ack.retention !== undefined && ack.queue !== undefined &&
      deletedAtAck(ack.id, this.#queues.settingsOf(ack.queue).retain_done_ms, ack.retention);
  }

  /**
   * What an ack that completed its job answers (`dropped`: by deleting it); takes note of the
   * move.
   */
  #acked(ack: PendingAck, dropped: boolean): AckResult {
    const { id, now } = ack;
    // A dropped job is in no flow, and its row is gone: its queue is the one noted at the ack.
    if (!dropped) this.#flows.ended([{ id, state: "done" }], now);
    const queue = dropped ? ack.queue! : this.#queueOf(id);
    // In a queue with groups or a concurrency, the ack may free a slot.
    const frees = this.#grouped.has(queue) || this.#queues.settingsOf(queue).concurrency !== null;
    this.#leasedQueues.delete(id);
    this.#queues.move(queue, "leased", dropped ? null : "done");
    return { id, queue, frees };
  }

  nack(id: number, token: string, request: NackRequest, now: number): Promise<NackResult> {
    return this.#write(() => {
      const row = this.#leased(id, token, now, "nack");
      const next = afterNack(attempted(row), request, now, this.#policy);
      const moved = this.#unlease(row, next, now);
      if (moved !== null) {
        return { id, queue: row.queue, state: "pending", run_at: now, moved_to: moved };
      }
      return { id, queue: row.queue, state: next.state, run_at: next.run_at };
    });
  }

  extend(
    id: number,
    token: string,
    lease_ms: number | null,
    now: number,
  ): Promise<{ id: number; expires_at: number }> {
    return this.#write(() => {
      const row = this.#leased(id, token, now, "extend");
      const length = extendLeaseMs(lease_ms, row.lease_len_ms, this.#policy);
      const expires = now + length;
      this.#statements.extend.run(expires, length, id);
      return { id, expires_at: expires };
    });
  }

  checkpoint(id: number, token: string, data: string, now: number): Promise<{ id: number }> {
    return this.#write(() => {
      this.#leased(id, token, now, "checkpoint");
      this.#statements.checkpoint.run(data, id);
      return { id };
    });
  }

  progress(id: number, token: string, progress: string, now: number): Promise<{ id: number }> {
    return this.#write(() => {
      // One fenced UPDATE, no read first: progress reports are frequent.
      const changed = this.#statements.progress.run(progress, now, id, token, now).changes;
      if (changed === 1) return { id };
      this.#leased(id, token, now, "report progress on");
      throw leaseLost(id, "report progress on");
    });
  }

  queueOf(id: number): Promise<string | null> {
    // From the table, never the leased-queue cache: that may hold an id whose job is gone.
    return this.#read(() =>
      (this.#statements.queueById.get(id) as { queue: string } | undefined)?.queue ?? null
    );
  }

  storedIds(ids: readonly number[]): Promise<Set<number>> {
    return this.#read(() => {
      const stored = new Set<number>();
      for (let at = 0; at < ids.length; at += MAINTENANCE_BATCH) {
        const chunk = JSON.stringify(ids.slice(at, at + MAINTENANCE_BATCH));
        for (const row of this.#statements.storedIds.all(chunk) as { id: number }[]) {
          stored.add(row.id);
        }
      }
      return stored;
    });
  }

  get(id: number): Promise<Job | null> {
    return this.#read(() => {
      const row = this.#statements.byId.get(id);
      return row === undefined ? null : rowToJob(row);
    });
  }

  createFlow(flow: NewFlow, order: number[], now: number): Promise<FlowCreated> {
    return this.#write(() => this.#flows.create(flow, order, now));
  }

  addFlowNodes(id: number, token: string, nodes: NewFlowNode[], now: number): Promise<FlowCreated> {
    return this.#write(() => {
      const row = this.#leased(id, token, now, "add nodes to the flow of");
      if (row.flow_id === null) throw notInFlow(id);
      return this.#flows.add(row.flow_id, nodes, now);
    });
  }

  getFlow(id: number): Promise<Flow | null> {
    return this.#read(() => this.#flows.get(id));
  }

  listFlows(after: number, limit: number, newest = false): Promise<FlowSummary[]> {
    return this.#read(() => this.#flows.list(after, limit, newest));
  }

  cancelFlow(id: number, now: number): Promise<FlowCancelled | null> {
    return this.#write(() => this.#flows.cancel(id, now));
  }

  onReleased(listener: (released: Released) => void): void {
    this.#onReleased = listener;
  }

  cancel(id: number, now: number): Promise<CancelResult> {
    return this.#write(() => {
      const row = this.#row(id);
      if (cancelRemoves(row.state)) {
        this.#statements.remove.run(id);
        this.#flows.swept([row]);
        this.#queues.move(row.queue, row.state, null);
        return { id, queue: row.queue, state: row.state, removed: true, revoked_token: null };
      }
      this.#statements.toCancelled.run(now, id);
      this.#queues.move(row.queue, row.state, "cancelled");
      this.#flows.ended([{ id, state: "cancelled" }], now);
      return {
        id,
        queue: row.queue,
        state: "cancelled",
        removed: false,
        revoked_token: row.state === "leased" ? row.lease_token : null,
      };
    });
  }

  setPaused(queue: string, paused: boolean): Promise<void> {
    return this.#write(() => {
      this.#statements.setPaused.run(queue, paused ? 1 : 0);
    }).then(() => {
      this.#queues.setPaused(queue, paused);
    });
  }

  settings(queue: string): Promise<QueueSettings> {
    return this.#read(() => copySettings(this.#queues.settingsOf(queue)));
  }

  putSettings(queue: string, settings: QueueSettings, now: number): Promise<QueueSettings> {
    const stored = copySettings(settings);
    return this.#write(() => {
      if (isDefaultSettings(stored)) {
        this.#statements.deleteSettings.run(queue);
        this.#queues.stageSettings(queue, null);
      } else {
        const row = settingsToRow(stored);
        this.#statements.putSettings.run(queue, ...settingsValues(row), now);
        this.#queues.stageSettings(queue, stored);
      }
      return copySettings(stored);
    });
  }

  getGroup(queue: string, group: string, now: number): Promise<GroupState> {
    return this.#read(() => this.#groups.states(queue, [group], this.#groupLimit(queue), now)[0]);
  }

  listGroups(
    queue: string,
    after: string | null,
    limit: number,
    now: number,
  ): Promise<GroupState[]> {
    return this.#read(() => {
      const names = this.#groups.names(queue, after, limit);
      return this.#groups.states(queue, names, this.#groupLimit(queue), now);
    });
  }

  putGroupSettings(
    queue: string,
    group: string,
    settings: GroupSettings | null,
    now: number,
  ): Promise<GroupState> {
    return this.#write(() => {
      this.#groups.put(queue, group, settings, now);
      return this.#groups.states(queue, [group], this.#groupLimit(queue), now)[0];
    });
  }

  stats(queue?: string, now = 0): Promise<QueueCounts[]> {
    const names = this.#queues.statsNames(queue);
    return this.#read(() => {
      // With many queues, one grouped scan of the pending index beats a query per queue.
      let oldestOf: Map<string, number> | null = null;
      if (names.length > 64) {
        const rows = this.#statements.oldestPendingAll.all() as { queue: string; at: number }[];
        oldestOf = new Map(rows.map((row) => [row.queue, row.at]));
      }
      const oldest = (name: string) =>
        oldestOf !== null
          ? oldestOf.get(name) ?? null
          : (this.#statements.oldestPending.get(name) as { at: number | null }).at;
      return names.map((name) =>
        queueCounts(name, {
          counts: this.#queues.counts(name),
          paused: this.#queues.isPaused(name),
          oldest_pending_at: () => oldest(name),
          settings: this.#queues.settingsOf(name),
          groups: this.#groupCounts(name, now),
          rate_held: this.#heldUntil.has(name),
        })
      );
    });
  }

  listJobs(queue: string, page: JobPage): Promise<Job[]> {
    return this.#read(() => {
      const s = this.#statements;
      const oldest = page.order === "oldest";
      const after = page.after ?? (oldest ? 0 : Number.MAX_SAFE_INTEGER);
      let rows: JobRow[];
      if (page.state === "pending") {
        const ids = s.pendingPage.ids(queue, page);
        rows = ids.length === 0 ? [] : s.jobsByIds.all(JSON.stringify(ids));
        rows.sort(oldest ? (a, b) => a.id - b.id : (a, b) => b.id - a.id);
      } else if (page.state === "leased") {
        rows = (oldest ? s.listLeasedOldest : s.listLeasedNewest).all(queue, after, page.limit);
      } else {
        rows = (oldest ? s.listOldest : s.listNewest).all(queue, page.state, after, page.limit);
      }
      return rows.map(rowToJob);
    });
  }

  findJobs(filter: JobFilter, after: number, limit: number): Promise<FoundJobs> {
    return this.#read(() => findJobsIn(this.#statements, filter, after, limit));
  }

  runNow(id: number, now: number): Promise<RunNowResult> {
    return this.#write(() => {
      const row = this.#row(id);
      if (!runNowPromotes(id, row.state)) {
        return { id, queue: row.queue, state: row.state, run_at: row.run_at };
      }
      this.#statements.runNow.run(now, id);
      this.#queues.move(row.queue, "delayed", "pending");
      return { id, queue: row.queue, state: "pending", run_at: now };
    });
  }

  moveWaiting(from: string, to: string | null, limit: number, now: number): Promise<string[]> {
    return this.#write(() => {
      const rows = this.#statements.moveWaiting.all(to, now, from, limit) as { queue: string }[];
      for (const row of rows) {
        this.#queues.move(from, "pending", null);
        this.#queues.move(row.queue, null, "pending");
      }
      return rows.map((row) => row.queue);
    });
  }

  requeueDead(
    queue: string,
    which: DeadJobs,
    now: number,
    limit: number,
  ): Promise<RequeueResult> {
    return this.#write(() => {
      let requeued = 0;
      let last: number | null = null;
      if ("after" in which) {
        const rows = this.#statements.requeueDeadAfter.all(now, queue, which.after, limit) as {
          id: number;
        }[];
        requeued = rows.length;
        for (const row of rows) if (last === null || row.id > last) last = row.id;
      } else {
        for (const id of which.ids.slice(0, limit)) {
          const n = Number(this.#statements.requeueOneDead.run(now, id, queue).changes);
          requeued += n;
          if (n > 0 && (last === null || id > last)) last = id;
        }
      }
      for (let i = 0; i < requeued; i++) this.#queues.move(queue, "dead", "pending");
      return { requeued, last };
    });
  }

  tick(now: number, mine: HandOvers, limit = MAINTENANCE_BATCH): Promise<TickResult> {
    return this.#write(() => {
      const woken = new Set<string>();
      const promoted = this.#statements.promote.all(now, limit) as { queue: string }[];
      for (const row of promoted) {
        this.#queues.move(row.queue, "delayed", "pending");
        woken.add(row.queue);
      }
      const expired: EndedLease[] = [];
      // Every lease that ran out, oldest first; those still their claiming server's to end
      // (leaseEndDue) are left as they are.
      const due = this.#statements.dueLeases.all(now, limit);
      for (const row of due) {
        if (!leaseEndDue(row, now, mine, true)) continue;
        const ended = this.#endLease(row, now, "expired");
        // Even a lease that ended in dead frees a slot of its group or queue.
        woken.add(row.queue);
        if (ended.moved_to !== undefined) woken.add(ended.moved_to);
        expired.push(ended);
      }
      return {
        woken: [...woken],
        expired,
        more: promoted.length === limit || (due.length === limit && expired.length > 0),
      };
    });
  }

  release(leases: LeaseRef[], now: number): Promise<EndedLease[]> {
    return this.#write(() => {
      const out: EndedLease[] = [];
      for (const { id, token, undelivered } of leases) {
        const row = this.#statements.byId.get(id);
        if (row === undefined || row.state !== "leased" || row.lease_token !== token) continue;
        out.push(this.#endLease(row, now, undelivered === true ? "undelivered" : "released"));
      }
      return out;
    });
  }

  /** The queues holding jobs or a setting, as of the last commit (kept in memory). */
  knownQueues(): KnownQueues {
    return this.#queues.known;
  }

  readyHint(queue: string): number {
    return this.#queues.counts(queue)?.pending ?? 0;
  }

  putSchedule(
    definition: ScheduleDefinition,
    next_at: number | null,
    now: number,
    limit?: number,
  ): Promise<Schedule> {
    return this.#write(() => this.#schedules.put(definition, next_at, now, limit));
  }

  countSchedules(): Promise<ScheduleCounts> {
    return this.#read(() => this.#schedules.count());
  }

  getSchedule(name: string): Promise<Schedule | null> {
    return this.#read(() => this.#schedules.get(name));
  }

  listSchedules(): Promise<Schedule[]> {
    return this.#read(() => this.#schedules.list());
  }

  deleteSchedule(name: string): Promise<boolean> {
    return this.#write(() => this.#schedules.delete(name));
  }

  pauseSchedule(
    name: string,
    paused: boolean,
    next_at: number | null,
    now: number,
  ): Promise<Schedule | null> {
    return this.#write(() => this.#schedules.pause(name, paused, next_at, now));
  }

  dueSchedules(now: number, limit: number): Promise<Schedule[]> {
    return this.#read(() => this.#schedules.due(now, limit));
  }

  nextScheduleAt(): Promise<number | null> {
    return this.#read(() => this.#schedules.nextAt());
  }

  nextDeadline(now: number): Promise<number | null> {
    return this.#read(() => {
      const delayed = (this.#statements.nextDelayed.get() as { at: number | null }).at;
      const lease = nextLeaseDeadline(
        (this.#statements.nextExpiry.get() as { at: number | null }).at,
        (this.#statements.nextUpcomingExpiry.get(now) as { at: number | null }).at,
        now,
      );
      if (delayed === null) return lease;
      if (lease === null) return delayed;
      return Math.min(delayed, lease);
    });
  }

  async sweepFinished(now: number, retainDoneMs: number): Promise<number> {
    const refused = this.#writeRefusal();
    if (refused !== null) throw refused;
    const s = this.#statements;
    // The queues holding finished jobs as the counts stand now, swept one after the other, each
    // by its own retention: a sweep reads only the jobs it deletes, however many other queues
    // keep. Each transaction deletes at most a chunk and visits at most a chunk of queues; the
    // next one starts where it stopped.
    const queues: string[] = [];
    for (const [queue, c] of this.#queues.withJobs()) {
      const expiring = c.pending > 0 && this.#queues.settingsOf(queue).retain_pending_ms !== null;
      if (c.done + c.cancelled + c.dead > 0 || expiring) queues.push(queue);
    }
    let total = 0;
    for (let next = 0; next < queues.length;) {
      const [n, stoppedAt] = await this.#write(() => {
        let n = 0;
        const sweep = (statement: CountedStatement, queue: string, before: number) => {
          const rows = statement.all(queue, before, MAINTENANCE_BATCH - n) as {
            state: JobState;
            id: number;
            flow_id: number | null;
          }[];
          for (const row of rows) this.#queues.move(queue, row.state, null);
          this.#flows.swept(rows);
          n += rows.length;
        };
        let i = next;
        for (; i < queues.length && i - next < SWEEP_QUEUES; i++) {
          const queue = queues[i];
          const own = this.#queues.settingsOf(queue);
          sweep(s.sweepDone, queue, now - (own.retain_done_ms ?? retainDoneMs));
          if (own.retain_dead_ms !== null && n < MAINTENANCE_BATCH) {
            sweep(s.sweepDead, queue, now - own.retain_dead_ms);
          }
          if (own.retain_pending_ms !== null && n < MAINTENANCE_BATCH) {
            sweep(s.sweepPending, queue, now - own.retain_pending_ms);
          }
          // A full chunk may have left more of this queue: the next transaction starts with it.
          if (n >= MAINTENANCE_BATCH) break;
        }
        return [n, i] as const;
      });
      total += n;
      next = stoppedAt;
    }
    return total;
  }

  probeWritable(): Promise<void> {
    return this.#write(() => {
      this.#statements.probe.run(Date.now());
    });
  }

  fileSizes(): { database: number; wal: number } | null {
    return sqliteFileSizes(this.#path);
  }

  /**
   * Grows only while SQLite compiles one of this store's statements: when they are prepared at
   * open, when a statement is first needed, and whenever a statement SQLite marked expired runs
   * again. Once the store is warm it stays put; one that grows at each run of the same
   * operation compiles that statement every time (see the notes on the statements below).
   */
  get compileChecks(): number {
    return this.#compileChecks;
  }

  commitStats(): CommitStats {
    return { ...copyCommitStats(this.#stats), statements: this.#statementsRun.n };
  }

  close(): Promise<void> {
    // Every caller waits for the same shutdown: a second close() must not resolve while the
    // first is still draining, or a caller could reopen the file before the lock is released.
    this.#closing ??= this.#shutDown();
    return this.#closing;
  }

  async #shutDown(): Promise<void> {
    // Writes that follow from the last commits (a lease released because its consumer is
    // gone, say) are still taken: drain until a macrotask passes with nothing new.
    do {
      await this.#commits.drained();
      while (this.#walSync?.busy) await new Promise((resolve) => setTimeout(resolve, 1));
      await new Promise((resolve) => setTimeout(resolve, 0));
    } while (this.#commits.waiting > 0 || this.#walSync?.busy);
    this.#closed = true;
    await this.#walSync?.close();
    try {
      // Without waiting: a reader that holds the WAL (Litestream keeps a read transaction open)
      // would hold the stop for the whole busy_timeout, and the checkpoint is only tidiness.
      this.#db.exec("PRAGMA busy_timeout = 0");
      this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } catch {
      // A failed checkpoint loses nothing: the WAL is replayed at the next open.
    }
    this.#dbClosed = true;
    this.#db.close();
    this.#lock?.close();
  }

  // ---- helpers ----

  #write<T>(operation: () => T): Promise<T> {
    const refused = this.#writeRefusal();
    if (refused !== null) return Promise.reject(refused);
    this.#run = null; // another write ends the open run (see OpenRun)
    return this.#submit(operation);
  }

  /** Hands a write the caller has checked (#writeRefusal) to group commit; answers once durable. */
  #submit<T>(operation: () => T): Promise<T> {
    const committed = this.#commits.submit(operation);
    const sync = this.#walSync;
    if (sync === null) return committed;
    // Nobody hears of a commit before the WAL holding it is fsynced.
    return committed.then((value) => sync.durable().then(() => value));
  }

  /**
   * When the next batch commits. With fsyncs (`sync: "full"`), as soon as no fsync is running:
   * at once when the disk is idle (latency), else once the running fsync ends and its callers
   * are answered, so that everything that arrived meanwhile shares one commit and the next fsync
   * (wal_sync.ts). Without them, at once when the last commit is old, else later in this turn of
   * the event loop (`setImmediate`) with whatever else arrives meanwhile. Not `setTimeout(0)`:
   * Deno's zero timer fires milliseconds later, which would hold every busy commit (and an idle
   * push's claim, right after its enqueue's commit) for that long.
   */
  #schedule(flush: () => void): void {
    const sync = this.#walSync;
    if (sync !== null) {
      sync.whenIdle(flush);
      return;
    }
    const run = () => {
      this.#lastFlushAt = performance.now();
      flush();
    };
    if (performance.now() - this.#lastFlushAt > IDLE_AFTER_MS) queueMicrotask(run);
    else setImmediate(run);
  }

  /** Why no write can be taken now, or null. */
  #writeRefusal(): Error | null {
    if (this.#closed) return new TegamiError("unavailable", "Cannot write: the store is closed");
    // After a failed fsync nothing can be acknowledged again: run nothing either, so a caller
    // told 503 (who will retry) never finds its write done after all.
    return this.#walSync?.failure ?? null;
  }

  /** Runs a read; a closed store or a failing statement rejects instead of throwing. */
  #read<T>(query: () => T): Promise<T> {
    if (this.#dbClosed) {
      return Promise.reject(new TegamiError("unavailable", "Cannot read: the store is closed"));
    }
    try {
      return Promise.resolve(query());
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * The queue of a job ack just completed: from the jobs this process leased, else from the
   * table. An UPDATE with RETURNING costs SQLite nearly as much again as the UPDATE, so ack asks
   * this instead. An entry can be stale (its lease ended otherwise, or the claim that wrote it
   * was rolled back and the id went to another job) but is never read stale: ack only succeeds
   * on a leased row, and every lease taken in this process rewrote its row's entry.
   */
  #queueOf(id: number): string {
    return this.#leasedQueues.get(id) ??
      (this.#statements.queueById.get(id) as { queue: string }).queue;
  }

  #rememberLeased(id: number, queue: string): void {
    // Entries of leases that ended some other way than ack stay (see #queueOf); the cap keeps
    // them from piling up.
    if (this.#leasedQueues.size >= LEASED_QUEUES_CAP) this.#leasedQueues.clear();
    this.#leasedQueues.set(id, queue);
  }

  /** Writes a stored job that a duplicate replaced (`job` given) or extended. */
  #applyChange(change: PlannedChange<ResolvedJob>): void {
    const s = this.#statements;
    const job = change.job;
    if (job === null) {
      s.extendJob.run(change.state, change.run_at, change.id);
      return;
    }
    s.replaceJob.run(
      change.state,
      job.payload,
      job.priority,
      job.max_attempts,
      change.run_at,
      job.lease_ms,
      job.backoff?.base_ms ?? null,
      job.backoff?.max_ms ?? null,
      change.key_expires_at,
      job.attributes ?? null,
      change.id,
    );
  }

  /** Rows changed by this connection so far (SQLite's `total_changes()`). */
  #totalChanges(): number {
    return (this.#statements.totalChanges.get() as { n: number }).n;
  }

  #row(id: number): JobRow {
    const row = this.#statements.byId.get(id);
    if (row === undefined) throw jobNotFound(id);
    return row;
  }

  #leased(id: number, token: string, now: number, action: string): JobRow {
    const row = this.#row(id);
    if (!holdsLease(row, token, now)) throw leaseLost(id, action);
    return row;
  }

  /** Ends a lease without an ack (expiry, holder gone) as the lifecycle rules say. */
  #endLease(row: JobRow, now: number, cause: LeaseEndCause): EndedLease {
    const next = afterLeaseEnd(attempted(row), cause, now);
    const moved = this.#unlease(row, next, now);
    const ended: EndedLease = {
      id: row.id,
      queue: row.queue,
      token: row.lease_token ?? "",
      state: moved === null ? next.state : "pending",
    };
    if (moved !== null) ended.moved_to = moved;
    return ended;
  }

  /**
   * Writes a leased job's move to `next` (retry, or dead); a job that dies in a queue with a
   * `dead_letter_queue` then moves there. Answers that queue, or null.
   */
  #unlease(row: JobRow, next: Transition, now: number): string | null {
    if (next.state === "dead") {
      this.#statements.toDead.run(next.error, next.run_at, row.id);
      this.#flows.ended([{ id: row.id, state: "dead" }], now);
    } else {
      this.#statements.toRetry.run(next.state, next.run_at, next.error, next.attempts, row.id);
    }
    this.#queues.move(row.queue, "leased", next.state);
    const to = next.state === "dead" ? this.#queues.settingsOf(row.queue).dead_letter_queue : null;
    if (to === null) return null;
    // Dead here first (so its group's count is settled), then pending in the dead-letter queue,
    // without its group or key, which belong to the queue it left.
    this.#statements.deadLetter.run(to, now, row.id);
    this.#queues.move(row.queue, "dead", null);
    this.#queues.move(to, null, "pending");
    return to;
  }
}

/** A copy of settings that later changes to either do not reach. */
function copySettings(settings: Readonly<QueueSettings>): QueueSettings {
  return {
    ...settings,
    rate: settings.rate === null ? null : { ...settings.rate },
    backoff: settings.backoff === null ? null : { ...settings.backoff },
  };
}
