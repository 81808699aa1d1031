/**
 * The PostgreSQL store: jobs in one table of a schema (`--pg-schema`, default `tegami`) that any
 * number of tegami servers share.
 *
 * - Claims are one statement, `WITH c AS (SELECT … FOR UPDATE SKIP LOCKED LIMIT n) UPDATE …
 *   FROM c RETURNING …`: servers claiming at once skip each other's rows instead of waiting,
 *   and no claim leases more than it asked for.
 * - Writes are group-committed (pg_group_commit.ts): a burst from one server shares one
 *   transaction and one WAL flush.
 * - Whatever another server must hear (jobs ready, a lease cancelled or expired here) is sent
 *   as a NOTIFY inside the transaction that did it, once per batch (pg_events.ts).
 * - Time: every transition takes `now` from the caller, the server's injected clock, exactly as
 *   on SQLite; SQL never calls `now()`. The servers' clocks must agree: {@linkcode
 *   PgStore.open} refuses to start, and {@linkcode PgStore.probeWritable} (`/readyz`) fails,
 *   when this host's clock is more than {@linkcode MAX_SKEW_MS} from the database's.
 * - Maintenance (promotion of due jobs, ending expired leases, the retention sweep) is safe when
 *   every server does it: each statement locks the rows it changes with `SKIP LOCKED` and
 *   re-checks their state, so two servers never end one lease twice.
 *
 * @module
 */

import { attempted, type JobRow, rowToJob, zeroCounts } from "../job_row.ts";
import { jobNotFound, leaseLost, TegamiError } from "../../core/errors.ts";
import type { Delivery, Enqueued, Job, JobState, NewJob } from "../../core/job.ts";
import { type KeyHolder, planEnqueue } from "../../core/dedup.ts";
import { newLeaseToken } from "../../core/lease_token.ts";
import { MAINTENANCE_BATCH } from "../../core/limits.ts";
import {
  afterNack,
  cancelRemoves,
  claimedCount,
  claimTotal,
  dealRoundRobin,
  type DoneRetention,
  type ExpiringLease,
  extendLeaseMs,
  type HandOvers,
  holdsLease,
  type LeaseEndCause,
  leaseEndDue,
  type LifecyclePolicy,
  type NackRequest,
  nextLeaseDeadline,
  runNowPromotes,
} from "../../core/lifecycle.ts";
import { claimCap } from "../../core/rate_bucket.ts";
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
  type JobPage,
  type KnownQueues,
  type LeaseRef,
  type NackResult,
  type Peers,
  type QueueCounts,
  type Released,
  type RemoteLeaseEnd,
  type RequeueResult,
  type RunNowResult,
  type ScheduleCounts,
  type ScheduleTick,
  type StateCounts,
  type Store,
  type StoreCapabilities,
  type TickResult,
} from "../store.ts";
import {
  asStoreError,
  connectPg,
  describeConnectError,
  describePgError,
  type Sql,
  type TxSql,
  withDeadline,
} from "./pg_driver.ts";
import { KNOWN_QUEUES_POLLS, PgKnownQueues } from "./pg_known_queues.ts";
import { channelOf, publishNews } from "./pg_events.ts";
import { PgPeers } from "./pg_peers.ts";
import { findJobsIn } from "./pg_find.ts";
import type { FoundJobs, JobFilter } from "../../core/job_filter.ts";
import { queueCounts, statsNames } from "../queue_stats.ts";
import {
  type AckItem,
  ackMany,
  applyDuplicates,
  countGroups,
  countingGroups,
  countPending,
  endLeases,
  type EnqueueItem,
  enqueueMany,
  flowDone,
  inIndexOrder,
  leaseClaimed,
  type ProgressItem,
  progressMany,
  sweepBySetting,
  unlease,
  withQueueDefault,
} from "./pg_statements.ts";
import {
  type BatchNews,
  type PgCommitObserver,
  PgGroupCommit,
  type PgOperation,
} from "./pg_group_commit.ts";
import { Coalescer } from "./pg_coalesce.ts";
import {
  addNodes,
  attachOutcomes,
  cancelFlow,
  createFlow,
  ended as flowEnded,
  getFlow,
  listFlows,
  swept as flowsSwept,
} from "./pg_flows.ts";
import {
  type Flow,
  type FlowCreated,
  type FlowSummary,
  type NewFlow,
  type NewFlowNode,
  notInFlow,
} from "../../core/flow.ts";
import { migratePg } from "./pg_schema.ts";
import { readAllQueueSettings, readQueueSettings, writeQueueSettings } from "./pg_settings.ts";
import {
  groupCounts,
  groupedCandidates,
  groupNames,
  groupStates,
  nextGroupToken,
  readCandidates,
  writeGroupBuckets,
  writeGroupSettings,
} from "./pg_groups.ts";
import type { GroupSettings, GroupState } from "../../core/group_settings.ts";
import { earliest, planGroupedClaim, takenByGroup } from "../group_row.ts";
import type { QueueSettings } from "../../core/queue_settings.ts";
import * as schedules from "./pg_schedules.ts";
import type { Schedule, ScheduleDefinition } from "../../core/schedule.ts";

/** Options of {@linkcode PgStore.open}. */
export interface PgStoreOptions {
  /** `postgres://user:password@host:port/database`, with `?sslmode=require` for TLS. */
  url: string;
  /** The schema holding tegami's tables, created if missing. @default "tegami" */
  schema?: string;
  /** Most connections this server opens (plus one for LISTEN). @default 10 */
  poolSize?: number;
  /** How often to look for work that notifications may have missed, ms. @default 1000 */
  pollMs?: number;
  /** Policy applied inside transactions. */
  policy: LifecyclePolicy;
  /** Sees every commit (batch size, duration, failure). */
  onCommit?: PgCommitObserver;
  /** Reports failures of background work (consumer-count heartbeats). */
  onBackgroundError?: (what: string, error: unknown) => void;
  /**
   * How long other servers' delivery of a queue this server feeds may go without delivering a
   * job, while jobs are ready, before the intake gate stops holding its producers, ms (see
   * pg_backlog_watch.ts). @default 50
   */
  stallMs?: number;
  /**
   * How often the backlog of a queue this server feeds and only others consume is counted, ms
   * (see pg_backlog_watch.ts). @default 10
   */
  watchMs?: number;
}

/** The most this host's clock may differ from the database's, ms. */
export const MAX_SKEW_MS = 500;

/** The longest a read may take before its caller is told `unavailable`, ms. */
const READ_DEADLINE_MS = 15_000;

/**
 * The most group-commit transactions one server runs at once (see pg_group_commit.ts). Two
 * overlap one transaction's round trips and WAL flush with the next one's statements; more
 * split the writes into smaller transactions that cost more each (measured on W2, see
 * docs/performance.md).
 */
const WRITE_TRANSACTIONS = 2;

/** The group commit's connections for a pool of `poolSize`: half of it, rounded up. */
function writerConnections(poolSize: number): number {
  return Math.max(1, Math.ceil(poolSize / 2));
}

/** The PostgreSQL implementation of {@linkcode Store}. */
export class PgStore implements Store {
  readonly #sql: Sql;
  readonly #policy: LifecyclePolicy;
  readonly #commits: PgGroupCommit;
  readonly #peers: PgPeers;
  /**
   * What this server hears from, and tells, the other servers sharing the database. A field, not
   * a getter, so that a wrapper of the store (a Proxy) reads it without touching private state.
   */
  readonly peers: Peers;
  readonly #known: PgKnownQueues;
  readonly #instance: string;
  readonly #stats: CommitStats = emptyCommitStats();
  readonly #acks: Coalescer<AckItem, AckResult>;
  readonly #enqueues: Coalescer<EnqueueItem, Enqueued[]>;
  readonly #progress: Coalescer<ProgressItem, { id: number }>;
  /** Queues whose last claim found a concurrency or a rate (see claimFair). */
  readonly #limited = new Set<string>();
  /** Queues whose last claim found groups: claimed with the grouped statement (see #claim). */
  readonly #grouped = new Set<string>();
  /** Queues whose last claim its rate held back, and when their next token comes. */
  readonly #heldUntil = new Map<string, number>();
  /** Queues whose last claim left groups held by their rates, and when the first gets a token. */
  readonly #groupsHeldUntil = new Map<string, number>();
  /** Told what a commit released (see `Store.onReleased`). */
  #onReleased: ((released: Released) => void) | null = null;
  #closed = false;
  #dbClosed = false;
  #closing: Promise<void> | null = null;
  /** The engine and its version. */
  readonly engine: string;
  /** Shared by any number of servers; no local files. */
  readonly capabilities: StoreCapabilities = { shared: true, localFiles: false };

  private constructor(
    sql: Sql,
    openWriter: () => Sql,
    engine: string,
    options: PgStoreOptions,
    schema: string,
  ) {
    this.#sql = sql;
    this.engine = engine;
    this.#policy = options.policy;
    this.#instance = crypto.randomUUID().slice(0, 8);
    const channel = channelOf(schema);
    const observer = options.onCommit;
    this.#commits = new PgGroupCommit(
      openWriter,
      (tx, news) => publishNews(tx, channel, this.#instance, news, this.#peers.watches),
      (size, ms, error) => {
        if (error === null) countCommit(this.#stats, size, ms);
        observer?.(size, ms, error);
      },
      // Wakes and ticks refused while the database was away are not repeated by anyone.
      () => this.#peers.resync(),
      Math.min(WRITE_TRANSACTIONS, writerConnections(options.poolSize ?? 10)),
      (news) => {
        const r = news.released;
        if (r.ready.length > 0 || r.due !== null || r.ended.length > 0) this.#onReleased?.(r);
      },
    );
    const submit = <T>(operation: PgOperation<T>, weight: () => number) =>
      this.#write(operation, true, weight);
    this.#acks = new Coalescer(submit, ackMany);
    this.#enqueues = new Coalescer(submit, enqueueMany);
    this.#progress = new Coalescer(submit, progressMany);
    this.#known = new PgKnownQueues(
      sql,
      KNOWN_QUEUES_POLLS * (options.pollMs ?? 1000),
      (error) => (options.onBackgroundError ?? (() => {}))("count the queues", error),
    );
    this.#peers = new PgPeers({
      sql,
      schema,
      instance: this.#instance,
      pollMs: options.pollMs ?? 1000,
      announce: (id, token, why) => this.#announce(id, token, why),
      stallMs: options.stallMs,
      watchMs: options.watchMs,
      onError: options.onBackgroundError ?? (() => {}),
    });
    this.peers = this.#peers;
  }

  /**
   * Connects, checks the clocks, migrates the schema and starts listening. Throws a plain
   * `Error` with a one-line reason when the database is unreachable or unfit.
   */
  static async open(options: PgStoreOptions): Promise<PgStore> {
    const schema = options.schema ?? "tegami";
    // Reads, LISTEN and heartbeats use one pool; the group commit, its own (see
    // pg_group_commit.ts on why it may replace it).
    const max = options.poolSize ?? 10;
    const sql = connectPg(options.url, { schema, max: Math.max(1, Math.floor(max / 2)) });
    const openWriter = () => connectPg(options.url, { schema, max: writerConnections(max) });
    try {
      let version: string;
      try {
        const [row] = await sql<{ v: string }[]>`SELECT current_setting('server_version') AS v`;
        version = row.v;
      } catch (error) {
        throw new Error(
          `Cannot connect to PostgreSQL at ${describeTarget(options.url)}: ${
            describeConnectError(options.url, error)
          }`,
        );
      }
      const major = Number.parseInt(version, 10);
      if (!(major >= 14)) {
        throw new Error(`Cannot use PostgreSQL ${version}: tegami needs 14 or newer`);
      }
      const skew = await measureSkew(sql);
      if (Math.abs(skew) > MAX_SKEW_MS) {
        throw new Error(
          `Cannot use PostgreSQL at ${describeTarget(options.url)}: this host's clock is ` +
            `${Math.round(skew)} ms off the database's (at most ${MAX_SKEW_MS} ms allowed)`,
        );
      }
      await migratePg(sql, schema);
      const store = new PgStore(sql, openWriter, `PostgreSQL ${version}`, options, schema);
      await store.#peers.start();
      await store.#known.start();
      return store;
    } catch (error) {
      await sql.end({ timeout: 1 });
      if (error instanceof Error && !(error instanceof TegamiError)) {
        throw error.message.startsWith("Cannot ")
          ? error
          : new Error(`Cannot open PostgreSQL schema "${schema}": ${describePgError(error)}`);
      }
      throw error;
    }
  }

  /** Sends a lease's end to the other servers with the next batch (best effort by contract). */
  #announce(id: number, token: string, why: RemoteLeaseEnd): void {
    if (this.#closed) return;
    // Rides on the next batch's transaction (or one of its own).
    this.#write((_tx, news) => {
      news.ended.push([id, token, why]);
      return Promise.resolve();
    }).catch(() => {});
  }

  // ---- Store ----

  /**
   * The queues as this server last counted them in the database, and those it enqueued into
   * since (see pg_known_queues.ts): `--max-queues` is judged on these.
   */
  knownQueues(): KnownQueues {
    return this.#known;
  }

  enqueue(queue: string, jobs: NewJob[], now: number, tick?: ScheduleTick): Promise<Enqueued[]> {
    return this.#enqueue(queue, jobs, now, tick).then((out) => {
      this.#known.add(queue);
      this.#peers.enqueued(queue, out);
      return out;
    });
  }

  #enqueue(
    queue: string,
    jobs: NewJob[],
    now: number,
    tick?: ScheduleTick,
  ): Promise<Enqueued[]> {
    // Without keys, enqueues arriving together share one INSERT; with them, an enqueue reads
    // and may change the jobs holding its keys (core/dedup.ts), so it runs alone, as does a
    // schedule's tick.
    if (tick === undefined && jobs.every((job) => job.key === null)) {
      return this.#enqueues.add({ queue, jobs, now });
    }
    return this.#write(async (tx, news) => {
      if (tick !== undefined) await schedules.takeTick(tx, tick);
      const keys = [...new Set(jobs.flatMap((job) => job.key === null ? [] : [job.key]))].sort();
      // Enqueues of one key take turns, on every server: once this holds the locks, the read
      // below sees every job holding these keys, and the INSERT cannot meet a key taken since.
      // (Locks taken in key order; a deadlock across batches is retried by the group commit.)
      await tx`
        SELECT pg_advisory_xact_lock(hashtext(${queue}), hashtext(k.key))
        FROM unnest(${keys}::text[]) WITH ORDINALITY AS k(key, ord) ORDER BY k.ord`;
      const holders = await tx<(KeyHolder & { id: number; key: string })[]>`
        SELECT id, key, state, run_at, key_expires_at FROM jobs
        WHERE queue = ${queue} AND key = ANY(${keys}::text[]) FOR UPDATE`;
      const plan = planEnqueue(holders, jobs, now);
      if (plan.released.length > 0) {
        await tx`
          UPDATE jobs SET released_key = key, key = NULL
          WHERE id = ANY(${plan.released}::bigint[])`;
      }
      await applyDuplicates(tx, queue, plan.changed);
      const fresh = plan.inserts;
      const inserted = fresh.length === 0 ? [] : await tx<{ id: number }[]>`
        WITH changed AS (
        INSERT INTO jobs (queue, state, priority, key, grp, payload, max_attempts, run_at,
          lease_ms, backoff_base_ms, backoff_max_ms, created_at, key_expires_at, attributes)
        SELECT ${queue}, t.state, t.priority, t.key, t.grp, t.payload,
          ${withQueueDefault(tx, "max_attempts", "t.max_attempts")}, t.run_at,
          ${withQueueDefault(tx, "lease_ms", "t.lease_ms")},
          ${withQueueDefault(tx, "backoff_base_ms", "t.base_ms")},
          ${withQueueDefault(tx, "backoff_max_ms", "t.max_ms")}, ${now}::bigint, t.key_expires_at,
          t.attributes
        FROM unnest(
          ${fresh.map((f) => f.state)}::text[], ${fresh.map((f) => f.job.priority)}::int[],
          ${fresh.map((f) => f.job.key)}::text[], ${fresh.map((f) => f.job.group ?? null)}::text[],
          ${fresh.map((f) => f.job.payload)}::text[],
          ${fresh.map((f) => f.job.max_attempts)}::int[], ${fresh.map((f) => f.run_at)}::bigint[],
          ${fresh.map((f) => f.job.lease_ms)}::bigint[],
          ${fresh.map((f) => f.job.backoff?.base_ms ?? null)}::bigint[],
          ${fresh.map((f) => f.job.backoff?.max_ms ?? null)}::bigint[],
          ${fresh.map((f) => f.key_expires_at)}::bigint[],
          ${fresh.map((f) => f.job.attributes ?? null)}::text[]
        ) WITH ORDINALITY AS t(state, priority, key, grp, payload, max_attempts, run_at, lease_ms,
          base_ms, max_ms, key_expires_at, attributes, ord)
        LEFT JOIN queue_settings s ON s.name = ${queue}
        ORDER BY t.ord
        RETURNING id, queue, grp, state
        ), ${countGroups(tx)}
        SELECT id FROM changed ORDER BY id`;
      // PostgreSQL inserts the rows in the SELECT's order, so their ids grow in that order.
      const out = plan.answers.map((a): Enqueued => ({
        id: a.slot.id ?? inserted[a.slot.insert as number].id,
        deduplicated: a.duplicate !== null,
        duplicate: a.duplicate,
        state: a.state,
        run_at: a.run_at,
      }));
      if (out.some((e) => e.duplicate !== "ignored" && e.state === "pending")) {
        news.ready.add(queue);
      }
      if (tick !== undefined) await schedules.recordTick(tx, tick, out);
      return out;
    });
  }

  claim(queue: string, max: number, lease_ms: number | null, now: number): Promise<Delivery[]> {
    return this.claimFair(queue, [{ max, lease_ms }], now).then((lists) => lists[0]);
  }

  claimFair(queue: string, wants: ClaimWant[], now: number): Promise<Delivery[][]> {
    const total = claimTotal(wants);
    const out: Delivery[][] = wants.map(() => []);
    if (total === 0) return this.#write(() => Promise.resolve(out));
    if (this.#limited.has(queue)) {
      return this.#write(async (tx) => {
        const lists = await this.#claimLimited(tx, queue, wants, total, now);
        await attachOutcomes(tx, lists);
        return lists;
      });
    }
    // The usual claim is one statement; if it finds the queue limited (a concurrency or a rate,
    // perhaps set by another server), it claimed nothing and the limited claim runs after it,
    // in the same transaction. A flow's jobs then read their prerequisites (a read only).
    return this.#write(async (tx) => {
      const claimed = await this.#claim(tx, queue, wants, total, now, true);
      if (claimed === "limited") {
        this.#limited.add(queue);
        const lists = await this.#claimLimited(tx, queue, wants, total, now);
        await attachOutcomes(tx, lists);
        return lists;
      }
      this.#heldUntil.delete(queue);
      await attachOutcomes(tx, claimed);
      return claimed;
    }, true);
  }

  /** Unknown: other servers write the database too (their estimate is {@linkcode PgPeers}'). */
  readyHint(): undefined {
    return undefined;
  }

  /** When the last claim of `queue` was held back by its rate, when the next token comes. */
  claimHeldUntil(queue: string): number | null {
    return earliest(this.#heldUntil.get(queue), this.#groupsHeldUntil.get(queue));
  }

  /**
   * The claim of a queue with a concurrency or a rate. Its bucket row is locked first, so the
   * servers claiming from the queue take turns, and only then (a later statement, so a fresh
   * snapshot that sees every claim committed before the lock was granted) are its settings, its
   * leased jobs and its tokens read: no two servers can both see the same free slot.
   */
  async #claimLimited(
    tx: TxSql,
    queue: string,
    wants: ClaimWant[],
    total: number,
    now: number,
  ): Promise<Delivery[][]> {
    const [locked] = await tx<{ tokens: number; at: number; fresh: boolean }[]>`
      INSERT INTO queue_buckets AS b (queue, tokens, at) VALUES (${queue}, -1, ${now})
      ON CONFLICT (queue) DO UPDATE SET queue = b.queue
      RETURNING b.tokens, b.at, b.tokens = -1 AS fresh`;
    const settings = await readQueueSettings(tx, queue);
    if (settings.concurrency === null && settings.rate === null) {
      this.#limited.delete(queue);
      this.#heldUntil.delete(queue);
      const claimed = await this.#claim(tx, queue, wants, total, now, false);
      return claimed as Delivery[][];
    }
    let leased = 0;
    if (settings.concurrency !== null) {
      const [row] = await tx<{ n: number }[]>`
        SELECT count(*)::int AS n FROM jobs WHERE queue = ${queue} AND state = 'leased'`;
      leased = row.n;
    }
    const bucket = locked.fresh ? null : locked;
    const { cap, tokens, heldUntil } = claimCap(settings, total, leased, bucket, now);
    if (heldUntil === null) this.#heldUntil.delete(queue);
    else this.#heldUntil.set(queue, heldUntil);
    if (cap <= 0) return wants.map(() => []);
    const out = await this.#claim(tx, queue, wants, cap, now, false) as Delivery[][];
    if (tokens !== null) {
      await tx`
        UPDATE queue_buckets SET tokens = ${tokens - claimedCount(out)}, at = ${now}
        WHERE queue = ${queue}`;
    }
    return out;
  }

  /**
   * Claims up to `total` jobs dealt over `wants`: with the plain statement unless the queue is
   * known to have groups, and with the grouped one when the plain one finds groups (it then
   * claimed nothing). `guarded`: claim nothing and answer "limited" if the queue has a
   * concurrency or a rate (the caller then takes the limited claim).
   */
  async #claim(
    tx: TxSql,
    queue: string,
    wants: ClaimWant[],
    total: number,
    now: number,
    guarded: boolean,
  ): Promise<Delivery[][] | "limited"> {
    if (!this.#grouped.has(queue)) {
      const plain = await this.#claimStatement(tx, queue, wants, total, now, guarded);
      if (plain.out === "limited" || !plain.grouped) return plain.out;
      this.#grouped.add(queue);
    }
    const full = await this.#claimGrouped(tx, queue, wants, total, now, guarded);
    if (!full.grouped) this.#grouped.delete(queue);
    return full.out;
  }

  /**
   * The plain claim statement, which takes ungrouped jobs only and claims nothing if the queue
   * has groups (answering `grouped`).
   */
  async #claimStatement(
    tx: TxSql,
    queue: string,
    wants: ClaimWant[],
    total: number,
    now: number,
    guarded: boolean,
  ): Promise<{ out: Delivery[][] | "limited"; grouped: boolean }> {
    // Which want each claimed job goes to, by claim position: fixed before the claim, so one
    // statement can write each job's own token and lease length.
    const positions = dealRoundRobin(total, wants);
    const out: Delivery[][] = wants.map(() => []);
    const tokens = positions.map(() => newLeaseToken());
    const leases = positions.map((w) => wants[w].lease_ms);
    const fallback = this.#policy.defaultLeaseMs;
    const count = this.#peers.countLimit(queue, total);
    type Claimed = JobRow & {
      k: number | null;
      limited: boolean;
      grouped: boolean;
      pending: number;
    };
    const rows = await inIndexOrder(
      tx,
      tx<Claimed[]>`
      WITH s AS (
        SELECT ${guarded}::boolean AND EXISTS (SELECT 1 FROM queue_settings WHERE name = ${queue}
            AND (concurrency IS NOT NULL OR rate_limit IS NOT NULL)) AS limited,
          EXISTS (SELECT 1 FROM job_groups WHERE queue = ${queue}) AS grouped,
          EXISTS (SELECT 1 FROM queues WHERE name = ${queue} AND paused) AS paused,
          ${countPending(tx, queue, count)} AS pending
      ), c AS (
        SELECT id, priority FROM jobs
        WHERE queue = ${queue} AND state = 'pending' AND grp IS NULL
          AND NOT (SELECT limited OR grouped OR paused FROM s)
        ORDER BY priority DESC, id
        LIMIT ${total}
        FOR UPDATE SKIP LOCKED
      ), n AS (
        SELECT id, row_number() OVER (ORDER BY priority DESC, id) AS k FROM c
      ), ${leaseClaimed(tx, tokens, leases, fallback, now)}`,
    );
    if (rows[0].limited) return { out: "limited", grouped: rows[0].grouped };
    const claimed = rows.filter((row) => row.k !== null) as (JobRow & { k: number })[];
    if (count > 0) this.#peers.counted(queue, rows[0].pending, claimed.length);
    claimed.sort((a, b) => a.k - b.k);
    for (const row of claimed) {
      out[positions[row.k - 1]].push({
        job: rowToJob(row),
        lease: { token: row.lease_token as string, expires_at: row.lease_expires_at as number },
      });
    }
    return { out, grouped: rows[0].grouped };
  }

  /**
   * The grouped claim: its candidates read and locked (pg_groups.ts), put in claim order with
   * each group giving no more than its room (claimOrder and GroupRooms, as on SQLite), then
   * leased by one statement; the buckets of groups with a rate are settled and the queue's next
   * group token noted. `guarded`: as {@linkcode PgStore.claimFair}'s #claim.
   */
  async #claimGrouped(
    tx: TxSql,
    queue: string,
    wants: ClaimWant[],
    total: number,
    now: number,
    guarded: boolean,
  ): Promise<{ out: Delivery[][] | "limited"; grouped: boolean }> {
    const count = this.#peers.countLimit(queue, total);
    const read = readCandidates(
      await inIndexOrder(tx, groupedCandidates(tx, queue, total, now, guarded, count)),
    );
    if (read.limited) return { out: "limited", grouped: read.grouped };
    const { ids, turns, rooms } = planGroupedClaim(
      read.groupRows,
      read.ungrouped,
      read.groupLimit,
      total,
      read.front,
      now,
    );
    const out: Delivery[][] = wants.map(() => []);
    const claimed: (JobRow & { k: number })[] = [];
    if (ids.length > 0) {
      const positions = dealRoundRobin(total, wants);
      const tokens = ids.map(() => newLeaseToken());
      const leases = ids.map((_, k) => wants[positions[k]].lease_ms);
      const rows = await tx<(JobRow & { k: number | null })[]>`
        WITH s AS (SELECT false AS limited, true AS grouped, 0 AS pending),
        n AS (SELECT * FROM unnest(${ids}::bigint[]) WITH ORDINALITY AS n(id, k)),
        t AS (
          UPDATE job_groups g SET turn = x.turn
          FROM unnest(${[...turns.keys()]}::text[], ${[...turns.values()]}::bigint[])
            AS x(grp, turn)
          WHERE g.queue = ${queue} AND g.grp = x.grp
        ),
        ${leaseClaimed(tx, tokens, leases, this.#policy.defaultLeaseMs, now)}`;
      for (const row of rows) if (row.k !== null) claimed.push(row as JobRow & { k: number });
      claimed.sort((a, b) => a.k - b.k);
      for (const row of claimed) {
        out[positions[Number(row.k) - 1]].push({
          job: rowToJob(row),
          lease: { token: row.lease_token as string, expires_at: row.lease_expires_at as number },
        });
      }
    }
    if (count > 0) this.#peers.counted(queue, read.pending, claimed.length);
    if (read.rated) {
      await writeGroupBuckets(tx, queue, rooms.buckets(takenByGroup(claimed), now), now);
      const next = await nextGroupToken(tx, queue, now);
      if (next === null) this.#groupsHeldUntil.delete(queue);
      else this.#groupsHeldUntil.set(queue, next);
    } else {
      this.#groupsHeldUntil.delete(queue);
    }
    return { out, grouped: read.grouped };
  }

  ack(
    id: number,
    token: string,
    result: string | null,
    now: number,
    retention?: DoneRetention,
  ): Promise<AckResult> {
    return this.#acks.add({
      id,
      token,
      result,
      now,
      // A job watched on another server is kept too, for that server to read how it ended.
      retention: retention === undefined ? undefined : {
        retainDoneMs: retention.retainDoneMs,
        watched: (job) => retention.watched(job) || this.#peers.watches.wanted(job),
      },
    });
  }

  nack(id: number, token: string, request: NackRequest, now: number): Promise<NackResult> {
    return this.#write(async (tx, news) => {
      const row = await this.#leased(tx, id, token, now, "nack");
      const next = afterNack(attempted(row), request, now, this.#policy);
      const [moved] = await unlease(tx, news, [{ id, next }], now);
      // Even a retry later frees a slot (of the job's group, of its queue's concurrency).
      news.ready.add(row.queue);
      if (moved !== null) {
        news.ready.add(moved);
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
    return this.#write(async (tx) => {
      const row = await this.#leased(tx, id, token, now, "extend");
      const length = extendLeaseMs(lease_ms, row.lease_len_ms, this.#policy);
      const expires = now + length;
      await tx`
        UPDATE jobs SET lease_expires_at = ${expires}, lease_len_ms = ${length} WHERE id = ${id}`;
      return { id, expires_at: expires };
    });
  }

  checkpoint(id: number, token: string, data: string, now: number): Promise<{ id: number }> {
    return this.#write(async (tx) => {
      await this.#leased(tx, id, token, now, "checkpoint");
      await tx`UPDATE jobs SET checkpoint = ${data} WHERE id = ${id}`;
      return { id };
    });
  }

  progress(id: number, token: string, progress: string, now: number): Promise<{ id: number }> {
    // Reports arriving together share one statement (and a commit): they are frequent.
    return this.#progress.add({ id, token, progress, now });
  }

  queueOf(id: number): Promise<string | null> {
    return this.#read("read the job", async (sql) => {
      const rows = await sql<{ queue: string }[]>`SELECT queue FROM jobs WHERE id = ${id}`;
      return rows.length === 0 ? null : rows[0].queue;
    });
  }

  storedIds(ids: readonly number[]): Promise<Set<number>> {
    if (ids.length === 0) return Promise.resolve(new Set());
    return this.#read("read which jobs are stored", async (sql) => {
      const rows = await sql<{ id: number }[]>`
        SELECT id FROM jobs WHERE id = ANY(${[...ids]}::bigint[])`;
      return new Set(rows.map((row) => Number(row.id)));
    });
  }

  get(id: number): Promise<Job | null> {
    return this.#read("read the job", async (sql) => {
      const rows = await sql<JobRow[]>`SELECT * FROM jobs WHERE id = ${id}`;
      return rows.length === 0 ? null : rowToJob(rows[0]);
    });
  }

  createFlow(flow: NewFlow, order: number[], now: number): Promise<FlowCreated> {
    return this.#write((tx, news) => createFlow(tx, news, flow, order, now)).then((out) => {
      for (const node of out.nodes) this.#known.add(node.queue);
      return out;
    });
  }

  addFlowNodes(id: number, token: string, nodes: NewFlowNode[], now: number): Promise<FlowCreated> {
    return this.#write(async (tx, news) => {
      const row = await this.#leased(tx, id, token, now, "add nodes to the flow of");
      if (row.flow_id === null) throw notInFlow(id);
      return await addNodes(tx, news, Number(row.flow_id), nodes, now);
    }).then((out) => {
      for (const node of out.nodes) this.#known.add(node.queue);
      return out;
    });
  }

  getFlow(id: number): Promise<Flow | null> {
    return this.#read("read the flow", (sql) => getFlow(sql, id));
  }

  listFlows(after: number, limit: number, newest = false): Promise<FlowSummary[]> {
    return this.#read("list the flows", (sql) => listFlows(sql, after, limit, newest));
  }

  cancelFlow(id: number, now: number): Promise<FlowCancelled | null> {
    return this.#write((tx, news) => cancelFlow(tx, news, id, now));
  }

  onReleased(listener: (released: Released) => void): void {
    this.#onReleased = listener;
  }

  cancel(id: number, now: number): Promise<CancelResult> {
    return this.#write(async (tx, news) => {
      const row = await this.#lockRow(tx, id);
      if (cancelRemoves(row.state)) {
        await tx`DELETE FROM jobs WHERE id = ${id}`;
        await flowsSwept(tx, [row]);
        return { id, queue: row.queue, state: row.state, removed: true, revoked_token: null };
      }
      await tx`
        UPDATE jobs SET state = 'cancelled', finished_at = ${now}, lease_expires_at = NULL,
          waiting_on = 0
        WHERE id = ${id}`;
      news.finished.push(id);
      if (row.flow_id !== null) await flowEnded(tx, news, [{ id, state: "cancelled" }], now);
      const revoked = row.state === "leased" ? row.lease_token : null;
      if (revoked !== null) news.ended.push([id, revoked, "cancelled"]);
      if (revoked !== null) news.ready.add(row.queue);
      return { id, queue: row.queue, state: "cancelled", removed: false, revoked_token: revoked };
    });
  }

  setPaused(queue: string, paused: boolean): Promise<void> {
    return this.#write(async (tx, news) => {
      await tx`
        INSERT INTO queues (name, paused) VALUES (${queue}, ${paused})
        ON CONFLICT (name) DO UPDATE SET paused = excluded.paused`;
      if (!paused) news.ready.add(queue);
    }).then(() => {
      if (paused) this.#known.add(queue);
    });
  }

  settings(queue: string): Promise<QueueSettings> {
    return this.#read("read the queue settings", (sql) => readQueueSettings(sql, queue));
  }

  putSettings(queue: string, settings: QueueSettings, now: number): Promise<QueueSettings> {
    return this.#write(async (tx, news) => {
      await writeQueueSettings(tx, queue, settings, now);
      // A limit may have been raised or removed: every server looks at the queue again.
      news.ready.add(queue);
      return await readQueueSettings(tx, queue);
    }).then((stored) => {
      this.#known.add(queue);
      return stored;
    });
  }

  getGroup(queue: string, group: string, now: number): Promise<GroupState> {
    return this.#read("read the group", async (sql) => {
      const [state] = await groupStates(sql, queue, [group], now);
      return state;
    });
  }

  listGroups(
    queue: string,
    after: string | null,
    limit: number,
    now: number,
  ): Promise<GroupState[]> {
    return this.#read("list the groups", async (sql) => {
      return await groupStates(sql, queue, await groupNames(sql, queue, after, limit), now);
    });
  }

  putGroupSettings(
    queue: string,
    group: string,
    settings: GroupSettings | null,
    now: number,
  ): Promise<GroupState> {
    return this.#write(async (tx, news) => {
      await writeGroupSettings(tx, queue, group, settings, now);
      // A limit may have been raised or removed: every server looks at the queue again.
      news.ready.add(queue);
      const [state] = await groupStates(tx, queue, [group], now);
      return state;
    });
  }

  stats(queue?: string, now = 0): Promise<QueueCounts[]> {
    return this.#read("read the stats", async (sql) => {
      const [counts, queues, oldest, settings, groups] = await Promise.all([
        queue === undefined
          ? sql<{ queue: string; state: JobState; n: number }[]>`
            SELECT queue, state, count(*) AS n FROM jobs GROUP BY queue, state`
          : sql<{ queue: string; state: JobState; n: number }[]>`
            SELECT queue, state, count(*) AS n FROM jobs WHERE queue = ${queue}
            GROUP BY queue, state`,
        queue === undefined
          ? sql<{ name: string; paused: boolean }[]>`SELECT name, paused FROM queues`
          : sql<{ name: string; paused: boolean }[]>`
            SELECT name, paused FROM queues WHERE name = ${queue}`,
        queue === undefined
          ? sql<{ queue: string; at: number }[]>`
            SELECT queue, min(run_at) AS at FROM jobs WHERE state = 'pending' GROUP BY queue`
          : sql<{ queue: string; at: number }[]>`
            SELECT queue, min(run_at) AS at FROM jobs WHERE state = 'pending'
              AND queue = ${queue} GROUP BY queue`,
        readAllQueueSettings(sql, queue),
        groupCounts(sql, queue, now),
      ]);
      const countsOf = new Map<string, StateCounts>();
      for (const row of counts) {
        let found = countsOf.get(row.queue);
        if (found === undefined) countsOf.set(row.queue, found = zeroCounts());
        found[row.state] = row.n;
      }
      const paused = new Set(queues.flatMap((row) => row.paused ? [row.name] : []));
      const oldestOf = new Map(oldest.map((row) => [row.queue, row.at]));
      return statsNames(queue, countsOf.keys(), paused, settings.keys()).map((name) =>
        queueCounts(name, {
          counts: countsOf.get(name),
          paused: paused.has(name),
          oldest_pending_at: () => oldestOf.get(name) ?? null,
          settings: settings.get(name),
          groups: groups.get(name),
          rate_held: this.#heldUntil.has(name),
        })
      );
    });
  }

  listJobs(queue: string, page: JobPage): Promise<Job[]> {
    return this.#read("list jobs", async (sql) => {
      const rows = page.order === "oldest"
        ? await sql<JobRow[]>`
          SELECT * FROM jobs WHERE queue = ${queue} AND state = ${page.state}
            AND id > ${page.after ?? 0} ORDER BY id LIMIT ${page.limit}`
        : await sql<JobRow[]>`
          SELECT * FROM jobs WHERE queue = ${queue} AND state = ${page.state}
            AND id < ${page.after ?? Number.MAX_SAFE_INTEGER} ORDER BY id DESC LIMIT ${page.limit}`;
      return rows.map(rowToJob);
    });
  }

  findJobs(filter: JobFilter, after: number, limit: number): Promise<FoundJobs> {
    return this.#read("find jobs", (sql) => findJobsIn(sql, filter, after, limit));
  }

  runNow(id: number, now: number): Promise<RunNowResult> {
    return this.#write(async (tx, news) => {
      const row = await this.#lockRow(tx, id);
      if (!runNowPromotes(id, row.state)) {
        return { id, queue: row.queue, state: row.state, run_at: row.run_at };
      }
      await tx`UPDATE jobs SET state = 'pending', run_at = ${now} WHERE id = ${id}`;
      news.ready.add(row.queue);
      return { id, queue: row.queue, state: "pending", run_at: now };
    });
  }

  moveWaiting(from: string, to: string | null, limit: number, now: number): Promise<string[]> {
    return this.#write(async (tx, news) => {
      const rows = await tx<{ queue: string }[]>`
        WITH m AS (
          SELECT id FROM jobs
          WHERE queue = ${from} AND state = 'pending' AND grp IS NULL
            AND (${to}::text IS NOT NULL OR dead_lettered_from IS NOT NULL)
          ORDER BY priority DESC, id LIMIT ${limit} FOR UPDATE SKIP LOCKED
        )
        UPDATE jobs j SET queue = coalesce(${to}::text, j.dead_lettered_from), run_at = ${now},
          dead_lettered_from = CASE WHEN ${to}::text IS NULL THEN NULL ELSE j.dead_lettered_from END,
          released_key = coalesce(j.key, j.released_key), key = NULL, key_expires_at = NULL
        FROM m WHERE j.id = m.id
        RETURNING j.queue`;
      for (const row of rows) news.ready.add(row.queue);
      return rows.map((row) => row.queue);
    });
  }

  requeueDead(
    queue: string,
    which: DeadJobs,
    now: number,
    limit: number,
  ): Promise<RequeueResult> {
    return this.#write(async (tx, news) => {
      const only = "after" in which
        ? tx`id > ${which.after} AND`
        : tx`id = ANY(${which.ids.slice(0, limit)}::bigint[]) AND`;
      const rows = await countingGroups(
        tx,
        tx<{ id: number }[]>`
        WITH d AS (
          SELECT id FROM jobs WHERE ${only} queue = ${queue} AND state = 'dead'
          ORDER BY id LIMIT ${limit} FOR UPDATE
        ), changed AS (
          UPDATE jobs j SET state = 'pending', attempts = 0, run_at = ${now}, finished_at = NULL
          FROM d WHERE j.id = d.id RETURNING j.id, j.queue, j.grp, j.state
        ), ${countGroups(tx)}
        SELECT id FROM changed`,
      );
      if (rows.length > 0) news.ready.add(queue);
      let last: number | null = null;
      for (const row of rows) if (last === null || row.id > last) last = row.id;
      return { requeued: rows.length, last };
    });
  }

  tick(now: number, mine: HandOvers, limit = MAINTENANCE_BATCH): Promise<TickResult> {
    return this.#write(async (tx, news) => {
      const woken = new Set<string>();
      const promoted = await countingGroups(
        tx,
        tx<{ queue: string }[]>`
        WITH d AS (
          SELECT id FROM jobs WHERE state = 'delayed' AND run_at <= ${now}
          ORDER BY run_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ), changed AS (
          UPDATE jobs j SET state = 'pending' FROM d WHERE j.id = d.id
          RETURNING j.queue, j.grp, j.state
        ), ${countGroups(tx)}
        SELECT queue FROM changed`,
      );
      for (const row of promoted) woken.add(row.queue);
      // Every lease that ran out, oldest first, read without a lock: those still their claiming
      // server's to end (leaseEndDue) are left alone, so that server's own tick and release
      // never wait for this one. The due ones are locked and read again.
      const ran = await tx<(ExpiringLease & { id: number })[]>`
        SELECT id, lease_token, lease_expires_at, lease_len_ms FROM jobs
        WHERE state = 'leased' AND lease_expires_at <= ${now}
        ORDER BY lease_expires_at LIMIT ${limit}`;
      const picked = ran.filter((lease) => leaseEndDue(lease, now, mine, false));
      const due = picked.length === 0 ? [] : (await tx<JobRow[]>`
        SELECT * FROM jobs WHERE id = ANY(${picked.map((lease) => lease.id)}::bigint[])
          AND state = 'leased' AND lease_expires_at <= ${now}
        ORDER BY lease_expires_at FOR UPDATE SKIP LOCKED`).filter((row) =>
        leaseEndDue(row, now, mine, false)
      );
      const ended = await endLeases(tx, news, due.map((row) => ({ row, cause: "expired" })), now);
      for (let i = 0; i < ended.length; i++) {
        const lease = ended[i];
        // Even a lease that ended in dead frees a slot (of its group, of its queue).
        woken.add(lease.queue);
        if (lease.moved_to !== undefined) woken.add(lease.moved_to);
        news.ended.push([lease.id, lease.token, "expired"]);
      }
      for (const queue of woken) news.ready.add(queue);
      return {
        woken: [...woken],
        expired: ended,
        more: promoted.length === limit || (ran.length === limit && ended.length > 0),
      };
    });
  }

  release(leases: LeaseRef[], now: number): Promise<EndedLease[]> {
    return this.#write(async (tx, news) => {
      if (leases.length === 0) return [];
      const rows = await tx<JobRow[]>`
        SELECT * FROM jobs WHERE id = ANY(${leases.map((l) => l.id)}::bigint[])
        ORDER BY id FOR UPDATE`;
      const byId = new Map(rows.map((row) => [row.id, row]));
      const ending: { row: JobRow; cause: LeaseEndCause }[] = [];
      for (const { id, token, undelivered } of leases) {
        const row = byId.get(id);
        if (row === undefined || row.state !== "leased" || row.lease_token !== token) continue;
        // A delivery nobody received does not count as an attempt.
        ending.push({ row, cause: undelivered === true ? "undelivered" : "released" });
      }
      const out = await endLeases(tx, news, ending, now);
      // Even a lease that ended in dead frees a slot (of its group, of its queue).
      for (const lease of out) {
        news.ready.add(lease.queue);
        if (lease.moved_to !== undefined) news.ready.add(lease.moved_to);
      }
      return out;
    });
  }

  putSchedule(
    definition: ScheduleDefinition,
    next_at: number | null,
    now: number,
    limit?: number,
  ): Promise<Schedule> {
    return this.#write((tx) => schedules.putSchedule(tx, definition, next_at, now, limit));
  }

  countSchedules(): Promise<ScheduleCounts> {
    return this.#read("count schedules", (sql) => schedules.countSchedules(sql));
  }

  getSchedule(name: string): Promise<Schedule | null> {
    return this.#read("read the schedule", (sql) => schedules.getSchedule(sql, name));
  }

  listSchedules(): Promise<Schedule[]> {
    return this.#read("list schedules", (sql) => schedules.listSchedules(sql));
  }

  deleteSchedule(name: string): Promise<boolean> {
    return this.#write((tx) => schedules.deleteSchedule(tx, name));
  }

  pauseSchedule(
    name: string,
    paused: boolean,
    next_at: number | null,
    now: number,
  ): Promise<Schedule | null> {
    return this.#write((tx) => schedules.pauseSchedule(tx, name, paused, next_at, now));
  }

  dueSchedules(now: number, limit: number): Promise<Schedule[]> {
    return this.#read("read due schedules", (sql) => schedules.dueSchedules(sql, now, limit));
  }

  nextScheduleAt(): Promise<number | null> {
    return this.#read("read the next schedule", (sql) => schedules.nextScheduleAt(sql));
  }

  nextDeadline(now: number): Promise<number | null> {
    return this.#read("read the next deadline", async (sql) => {
      const [row] = await sql<
        { delayed: number | null; lease: number | null; upcoming: number | null }[]
      >`
        SELECT (SELECT min(run_at) FROM jobs WHERE state = 'delayed') AS delayed,
               (SELECT min(lease_expires_at) FROM jobs WHERE state = 'leased') AS lease,
               (SELECT min(lease_expires_at) FROM jobs
                WHERE state = 'leased' AND lease_expires_at > ${now}) AS upcoming`;
      const lease = nextLeaseDeadline(row.lease, row.upcoming, now);
      if (row.delayed === null) return lease;
      if (lease === null) return row.delayed;
      return Math.min(row.delayed, lease);
    });
  }

  async sweepFinished(now: number, retainDoneMs: number): Promise<number> {
    type SweptRow = { id: number; flow_id: number | null };
    let total = 0;
    for (;;) {
      const [n, full] = await this.#write(async (tx) => {
        // Done and cancelled jobs, queue by queue, each by its own retain_done_ms or the
        // server's: one descent of jobs_finished finds each queue holding finished jobs, and each
        // queue's jobs are read from the oldest finish up to its cutoff, so a sweep reads only
        // what it deletes, however many jobs other queues keep.
        const done = await tx`
          WITH RECURSIVE queues (name) AS (
            (SELECT queue FROM jobs WHERE finished_at IS NOT NULL ORDER BY queue LIMIT 1)
            UNION ALL
            SELECT (SELECT j.queue FROM jobs j WHERE j.finished_at IS NOT NULL AND j.queue > q.name
                    ORDER BY j.queue LIMIT 1)
            FROM queues q WHERE q.name IS NOT NULL
          ), f AS (
            SELECT x.id FROM queues q
            LEFT JOIN queue_settings s ON s.name = q.name
            CROSS JOIN LATERAL (
              SELECT j.id FROM jobs j
              WHERE j.queue = q.name AND j.state IN ('done', 'cancelled')
                AND j.finished_at <
                  ${now}::bigint - coalesce(s.retain_done_ms, ${retainDoneMs}::bigint)
                AND ${flowDone(tx)}
              LIMIT ${MAINTENANCE_BATCH} FOR UPDATE OF j SKIP LOCKED
            ) x
            WHERE q.name IS NOT NULL
            LIMIT ${MAINTENANCE_BATCH}
          )
          DELETE FROM jobs j USING f WHERE j.id = f.id RETURNING j.id, j.flow_id`;
        // Dead jobs of the queues with a retain_dead_ms (without one they stay), and pending
        // jobs of those with a retain_pending_ms that have waited longer than it since they
        // became due, oldest first (jobs_pending_age).
        const dead = await sweepBySetting(
          tx,
          "retain_dead_ms",
          tx`j.state = 'dead' AND j.finished_at < ${now}::bigint - s.retain_dead_ms
            AND ${flowDone(tx)}`,
        );
        // A flow's pending jobs wait for as long as their flow runs.
        const pending = await sweepBySetting(
          tx,
          "retain_pending_ms",
          tx`j.state = 'pending' AND j.run_at < ${now}::bigint - s.retain_pending_ms
            AND j.flow_id IS NULL ORDER BY j.run_at`,
        );
        await flowsSwept(tx, [...(done as unknown as SweptRow[]), ...dead]);
        const full = done.length === MAINTENANCE_BATCH || dead.length === MAINTENANCE_BATCH ||
          pending.length === MAINTENANCE_BATCH;
        return [done.length + dead.length + pending.length, full] as const;
      });
      total += n;
      if (!full) return total;
    }
  }

  async probeWritable(): Promise<void> {
    await this.#write(async (tx) => {
      await tx`
        INSERT INTO probe (id, at) VALUES (1, ${Date.now()})
        ON CONFLICT (id) DO UPDATE SET at = excluded.at`;
    });
    const skew = await this.#read("read the database clock", measureSkew);
    if (Math.abs(skew) > MAX_SKEW_MS) {
      throw new TegamiError(
        "unavailable",
        `This host's clock is ${Math.round(skew)} ms off the database's ` +
          `(at most ${MAX_SKEW_MS} ms allowed): leases would be judged wrongly`,
      );
    }
  }

  commitStats(): CommitStats {
    return copyCommitStats(this.#stats);
  }

  fileSizes(): null {
    return null;
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutDown();
    return this.#closing;
  }

  async #shutDown(): Promise<void> {
    // Writes that follow from the last commits (a lease released because its consumer is
    // gone, say) are still taken: drain until a macrotask passes with nothing new.
    do {
      await this.#commits.drained();
      await new Promise((resolve) => setTimeout(resolve, 0));
    } while (this.#commits.waiting > 0);
    this.#closed = true;
    await this.#known.stop();
    await this.#peers.close();
    await this.#commits.close();
    this.#dbClosed = true;
    await this.#sql.end({ timeout: 5 });
  }

  // ---- helpers ----

  /** Submits a write; `pipelined` only for an operation that is one SQL statement. */
  #write<T>(
    operation: (tx: TxSql, news: BatchNews) => Promise<T>,
    pipelined = false,
    weight?: () => number,
  ): Promise<T> {
    if (this.#closed) {
      return Promise.reject(new TegamiError("unavailable", "Cannot write: the store is closed"));
    }
    return this.#commits.submit(operation, pipelined, weight);
  }

  async #read<T>(action: string, query: (sql: Sql) => Promise<T>): Promise<T> {
    if (this.#dbClosed) {
      throw new TegamiError("unavailable", "Cannot read: the store is closed");
    }
    try {
      return await withDeadline(query(this.#sql), READ_DEADLINE_MS, action);
    } catch (error) {
      throw asStoreError(error, action);
    }
  }

  async #lockRow(tx: TxSql, id: number): Promise<JobRow> {
    const rows = await tx<JobRow[]>`SELECT * FROM jobs WHERE id = ${id} FOR UPDATE`;
    if (rows.length === 0) throw jobNotFound(id);
    return rows[0];
  }

  async #leased(tx: TxSql, id: number, token: string, now: number, action: string) {
    const row = await this.#lockRow(tx, id);
    if (!holdsLease(row, token, now)) throw leaseLost(id, action);
    return row;
  }
}

/** How far the database's clock is ahead of this host's, ms (half a round trip precise). */
async function measureSkew(sql: Sql): Promise<number> {
  const before = Date.now();
  const [row] = await sql<{ at: number }[]>`
    SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS at`;
  const after = Date.now();
  return row.at - (before + after) / 2;
}

/** `host:port/database` of a URL, without user or password. */
export function describeTarget(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.host}${parsed.pathname}`;
  } catch {
    return "the given URL";
  }
}
