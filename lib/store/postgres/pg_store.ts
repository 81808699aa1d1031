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
import { newLeaseToken } from "../../core/lease_token.ts";
import { DEFAULT_MAX_ATTEMPTS } from "../../core/limits.ts";
import {
  afterLeaseEnd,
  afterNack,
  cancelRemoves,
  claimTotal,
  dealRoundRobin,
  extendLeaseMs,
  holdsLease,
  initialState,
  type LeaseEndCause,
  type LifecyclePolicy,
  type NackRequest,
  runNowPromotes,
  type Transition,
} from "../../core/lifecycle.ts";
import {
  type CancelResult,
  type ClaimWant,
  type CommitStats,
  copyCommitStats,
  countCommit,
  emptyCommitStats,
  type EndedLease,
  type JobPage,
  type KnownQueues,
  type LeaseRef,
  type NackResult,
  type QueueCounts,
  type RemoteLeaseEnd,
  type RunNowResult,
  type Store,
  type StoreCapabilities,
  type StoreEvent,
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
import { channelOf, PgEvents, publishNews } from "./pg_events.ts";
import {
  type BatchNews,
  type PgCommitObserver,
  PgGroupCommit,
  type PgOperation,
} from "./pg_group_commit.ts";
import { Coalescer } from "./pg_coalesce.ts";
import { migratePg } from "./pg_schema.ts";
import { readAllQueueSettings, readQueueSettings, writeQueueSettings } from "./pg_settings.ts";
import { DEFAULT_QUEUE_SETTINGS, type QueueSettings } from "../../core/queue_settings.ts";

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
}

/** The most this host's clock may differ from the database's, ms. */
export const MAX_SKEW_MS = 500;

/** The longest a read may take before its caller is told `unavailable`, ms. */
const READ_DEADLINE_MS = 15_000;

/** How many rows one maintenance statement changes at most (keeps each commit short). */
const CHUNK = 5000;

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
  readonly #events: PgEvents;
  readonly #known: PgKnownQueues;
  readonly #instance: string;
  readonly #stats: CommitStats = emptyCommitStats();
  readonly #acks: Coalescer<AckItem, { id: number; queue: string }>;
  readonly #enqueues: Coalescer<EnqueueItem, Enqueued[]>;
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
      (tx, news) => publishNews(tx, channel, this.#instance, news),
      (size, ms, error) => {
        if (error === null) countCommit(this.#stats, size, ms);
        observer?.(size, ms, error);
      },
      // Wakes and ticks refused while the database was away are not repeated by anyone.
      () => this.#events.resync(),
      Math.min(WRITE_TRANSACTIONS, writerConnections(options.poolSize ?? 10)),
    );
    const submit = <T>(operation: PgOperation<T>, weight: () => number) =>
      this.#write(operation, true, weight);
    this.#acks = new Coalescer(submit, (tx, _news, items) => ackMany(tx, items));
    this.#enqueues = new Coalescer(submit, enqueueMany);
    this.#known = new PgKnownQueues(
      sql,
      KNOWN_QUEUES_POLLS * (options.pollMs ?? 1000),
      (error) => (options.onBackgroundError ?? (() => {}))("count the queues", error),
    );
    this.#events = new PgEvents({
      sql,
      schema,
      instance: this.#instance,
      pollMs: options.pollMs ?? 1000,
      onError: options.onBackgroundError ?? (() => {}),
    });
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
      await store.#events.start();
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

  // ---- news from the other servers ----

  listen(listener: (event: StoreEvent) => void): () => void {
    return this.#events.listen(listener);
  }

  announce(id: number, token: string, why: RemoteLeaseEnd): void {
    if (this.#closed) return;
    // Rides on the next batch's transaction (or one of its own): best effort by contract.
    this.#write((_tx, news) => {
      news.ended.push([id, token, why]);
      return Promise.resolve();
    }).catch(() => {});
  }

  setConsumers(queue: string, n: number): void {
    this.#events.setConsumers(queue, n);
  }

  consumers(queue: string): number {
    return this.#events.consumers(queue);
  }

  // ---- Store ----

  /**
   * The queues as this server last counted them in the database, and those it enqueued into
   * since (see pg_known_queues.ts): `--max-queues` is judged on these.
   */
  knownQueues(): KnownQueues {
    return this.#known;
  }

  enqueue(queue: string, jobs: NewJob[], now: number): Promise<Enqueued[]> {
    return this.#enqueue(queue, jobs, now).then((out) => {
      this.#known.add(queue);
      return out;
    });
  }

  #enqueue(queue: string, jobs: NewJob[], now: number): Promise<Enqueued[]> {
    // Without keys, enqueues arriving together share one INSERT; with them, an enqueue may
    // read the jobs holding its keys after its INSERT, so it runs alone.
    if (jobs.every((job) => job.key === null)) return this.#enqueues.add({ queue, jobs, now });
    return this.#write(async (tx, news) => {
      const states = jobs.map((job): JobState => initialState(job.run_at, now));
      const inserted = await tx<{ id: number; key: string | null }[]>`
        INSERT INTO jobs (queue, state, priority, key, payload, max_attempts, run_at, lease_ms,
          backoff_base_ms, backoff_max_ms, created_at)
        SELECT ${queue}, t.state, t.priority, t.key, t.payload,
          -- withQueueDefaults() (core/queue_settings.ts) in SQL: the job's own, else its queue's
          -- (s, from the row this transaction reads), else the server's.
          coalesce(t.max_attempts, s.max_attempts, ${DEFAULT_MAX_ATTEMPTS}::int), t.run_at,
          coalesce(t.lease_ms, s.lease_ms), coalesce(t.base_ms, s.backoff_base_ms),
          coalesce(t.max_ms, s.backoff_max_ms), ${now}::bigint
        FROM unnest(
          ${states}::text[], ${jobs.map((j) => j.priority)}::int[], ${
        jobs.map((j) => j.key)
      }::text[],
          ${jobs.map((j) => j.payload)}::text[], ${jobs.map((j) => j.max_attempts)}::int[],
          ${jobs.map((j, i) => states[i] === "delayed" ? j.run_at : now)}::bigint[],
          ${jobs.map((j) => j.lease_ms)}::bigint[],
          ${jobs.map((j) => j.backoff?.base_ms ?? null)}::bigint[],
          ${jobs.map((j) => j.backoff?.max_ms ?? null)}::bigint[]
        ) WITH ORDINALITY AS t(state, priority, key, payload, max_attempts, run_at, lease_ms,
          base_ms, max_ms, ord)
        LEFT JOIN queue_settings s ON s.name = ${queue}
        ORDER BY t.ord
        ON CONFLICT (queue, key) WHERE key IS NOT NULL DO NOTHING
        RETURNING id, key`;
      // PostgreSQL inserts the rows in the SELECT's order and RETURNING answers them in that
      // order; a job without a key never conflicts, so walking both lists in step pairs them.
      const out: Enqueued[] = new Array(jobs.length);
      const inBatch = new Map<string, Enqueued>();
      const missing: number[] = [];
      let r = 0;
      for (let i = 0; i < jobs.length; i++) {
        const key = jobs[i].key;
        if (key === null) {
          out[i] = { id: inserted[r++].id, deduplicated: false, state: states[i] };
          continue;
        }
        const earlier = inBatch.get(key);
        if (earlier !== undefined) {
          out[i] = { id: earlier.id, deduplicated: true, state: earlier.state };
        } else if (r < inserted.length && inserted[r].key === key) {
          out[i] = { id: inserted[r++].id, deduplicated: false, state: states[i] };
          inBatch.set(key, out[i]);
        } else missing.push(i);
      }
      if (missing.length > 0) {
        const keys = missing.map((i) => jobs[i].key as string);
        const rows = await tx<{ id: number; key: string; state: JobState }[]>`
          SELECT id, key, state FROM jobs WHERE queue = ${queue} AND key = ANY(${keys}::text[])`;
        const byKey = new Map(rows.map((row) => [row.key, row]));
        for (const i of missing) {
          const row = byKey.get(jobs[i].key as string);
          if (row === undefined) {
            // Its holder was removed after our INSERT skipped it: a rare race, safe to retry.
            throw new Error(`the job holding key "${jobs[i].key}" vanished during the enqueue`);
          }
          out[i] = { id: row.id, deduplicated: true, state: row.state };
        }
      }
      if (out.some((e) => !e.deduplicated && e.state === "pending")) news.ready.add(queue);
      return out;
    });
  }

  claim(queue: string, max: number, lease_ms: number | null, now: number): Promise<Delivery[]> {
    return this.claimFair(queue, [{ max, lease_ms }], now).then((lists) => lists[0]);
  }

  claimFair(queue: string, wants: ClaimWant[], now: number): Promise<Delivery[][]> {
    const total = claimTotal(wants);
    // Which want each claimed job goes to, by claim position: fixed before the claim, so one
    // statement can write each job's own token and lease length.
    const positions = dealRoundRobin(total, wants);
    const out: Delivery[][] = wants.map(() => []);
    if (total === 0) return this.#write(() => Promise.resolve(out));
    const tokens = positions.map(() => newLeaseToken());
    const leases = positions.map((w) => wants[w].lease_ms);
    const fallback = this.#policy.defaultLeaseMs;
    return this.#write(async (tx) => {
      const rows = await tx<(JobRow & { k: number })[]>`
        WITH c AS (
          SELECT id, priority FROM jobs
          WHERE queue = ${queue} AND state = 'pending'
            AND NOT EXISTS (SELECT 1 FROM queues WHERE name = ${queue} AND paused)
          ORDER BY priority DESC, id
          LIMIT ${total}
          FOR UPDATE SKIP LOCKED
        ), n AS (
          SELECT id, row_number() OVER (ORDER BY priority DESC, id) AS k FROM c
        ), p AS (
          SELECT * FROM unnest(${tokens}::text[], ${leases}::bigint[]) WITH ORDINALITY
            AS p(token, lease, k)
        )
        -- The lease length is claimLeaseMs() (core/lifecycle.ts) in SQL: the consumer's, else
        -- the job's own, else the server's.
        UPDATE jobs j SET state = 'leased', attempts = j.attempts + 1, lease_token = p.token,
          lease_len_ms = coalesce(p.lease, j.lease_ms, ${fallback}::bigint),
          lease_expires_at = ${now}::bigint + coalesce(p.lease, j.lease_ms, ${fallback}::bigint)
        FROM n JOIN p ON p.k = n.k
        WHERE j.id = n.id
        RETURNING j.*, n.k`;
      rows.sort((a, b) => a.k - b.k);
      for (const row of rows) {
        out[positions[row.k - 1]].push({
          job: rowToJob(row),
          lease: { token: row.lease_token as string, expires_at: row.lease_expires_at as number },
        });
      }
      return out;
    }, true);
  }

  ack(
    id: number,
    token: string,
    result: string | null,
    now: number,
  ): Promise<{ id: number; queue: string }> {
    return this.#acks.add({ id, token, result, now });
  }

  nack(id: number, token: string, request: NackRequest, now: number): Promise<NackResult> {
    return this.#write(async (tx, news) => {
      const row = await this.#leased(tx, id, token, now, "nack");
      const next = afterNack(attempted(row), request, now, this.#policy);
      await unlease(tx, [{ id, next }]);
      if (next.state === "pending") news.ready.add(row.queue);
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

  queueOf(id: number): Promise<string | null> {
    return this.#read("read the job", async (sql) => {
      const rows = await sql<{ queue: string }[]>`SELECT queue FROM jobs WHERE id = ${id}`;
      return rows.length === 0 ? null : rows[0].queue;
    });
  }

  get(id: number): Promise<Job | null> {
    return this.#read("read the job", async (sql) => {
      const rows = await sql<JobRow[]>`SELECT * FROM jobs WHERE id = ${id}`;
      return rows.length === 0 ? null : rowToJob(rows[0]);
    });
  }

  cancel(id: number, now: number): Promise<CancelResult> {
    return this.#write(async (tx, news) => {
      const row = await this.#lockRow(tx, id);
      if (cancelRemoves(row.state)) {
        await tx`DELETE FROM jobs WHERE id = ${id}`;
        return { id, queue: row.queue, state: row.state, removed: true, revoked_token: null };
      }
      await tx`
        UPDATE jobs SET state = 'cancelled', finished_at = ${now}, lease_expires_at = NULL
        WHERE id = ${id}`;
      const revoked = row.state === "leased" ? row.lease_token : null;
      if (revoked !== null) news.ended.push([id, revoked, "cancelled"]);
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

  stats(queue?: string): Promise<QueueCounts[]> {
    return this.#read("read the stats", async (sql) => {
      const [counts, queues, oldest, settings] = await Promise.all([
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
      ]);
      const byName = new Map<string, QueueCounts>();
      const entry = (name: string): QueueCounts => {
        let found = byName.get(name);
        if (found === undefined) {
          found = {
            name,
            paused: false,
            counts: zeroCounts(),
            oldest_pending_at: null,
            settings: settings.get(name) ?? DEFAULT_QUEUE_SETTINGS,
          };
          byName.set(name, found);
        }
        return found;
      };
      if (queue !== undefined) entry(queue);
      for (const row of counts) entry(row.queue).counts[row.state] = row.n;
      for (const row of queues) {
        if (row.paused || byName.has(row.name)) entry(row.name).paused = row.paused;
      }
      for (const row of oldest) entry(row.queue).oldest_pending_at = row.at;
      // A queue with settings is known even without jobs.
      for (const name of settings.keys()) entry(name);
      return [...byName.values()].sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    });
  }

  listDead(queue: string, limit: number, after: number): Promise<Job[]> {
    return this.#read("list dead jobs", async (sql) => {
      const rows = await sql<JobRow[]>`
        SELECT * FROM jobs WHERE queue = ${queue} AND state = 'dead' AND id > ${after}
        ORDER BY id LIMIT ${limit}`;
      return rows.map(rowToJob);
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

  requeueDead(queue: string, ids: number[] | null, now: number): Promise<number> {
    return this.#write(async (tx, news) => {
      const rows = ids === null
        ? await tx`
          UPDATE jobs SET state = 'pending', attempts = 0, run_at = ${now}, finished_at = NULL
          WHERE queue = ${queue} AND state = 'dead' RETURNING id`
        : await tx`
          UPDATE jobs SET state = 'pending', attempts = 0, run_at = ${now}, finished_at = NULL
          WHERE id = ANY(${ids}::bigint[]) AND queue = ${queue} AND state = 'dead' RETURNING id`;
      if (rows.length > 0) news.ready.add(queue);
      return rows.length;
    });
  }

  tick(now: number, limit = CHUNK): Promise<TickResult> {
    return this.#write(async (tx, news) => {
      const woken = new Set<string>();
      const promoted = await tx<{ queue: string }[]>`
        WITH d AS (
          SELECT id FROM jobs WHERE state = 'delayed' AND run_at <= ${now}
          ORDER BY run_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
        )
        UPDATE jobs j SET state = 'pending' FROM d WHERE j.id = d.id RETURNING j.queue`;
      for (const row of promoted) woken.add(row.queue);
      const due = await tx<JobRow[]>`
        SELECT * FROM jobs WHERE state = 'leased' AND lease_expires_at <= ${now}
        ORDER BY lease_expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`;
      const ended = await endLeases(tx, due.map((row) => ({ row, cause: "expired" })), now);
      for (const lease of ended) {
        if (lease.state === "pending") woken.add(lease.queue);
        news.ended.push([lease.id, lease.token, "expired"]);
      }
      for (const queue of woken) news.ready.add(queue);
      return {
        woken: [...woken],
        expired: ended,
        more: promoted.length === limit || due.length === limit,
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
      const out = await endLeases(tx, ending, now);
      for (const lease of out) if (lease.state === "pending") news.ready.add(lease.queue);
      return out;
    });
  }

  nextDeadline(): Promise<number | null> {
    return this.#read("read the next deadline", async (sql) => {
      const [row] = await sql<{ delayed: number | null; lease: number | null }[]>`
        SELECT (SELECT min(run_at) FROM jobs WHERE state = 'delayed') AS delayed,
               (SELECT min(lease_expires_at) FROM jobs WHERE state = 'leased') AS lease`;
      if (row.delayed === null) return row.lease;
      if (row.lease === null) return row.delayed;
      return Math.min(row.delayed, row.lease);
    });
  }

  async sweepFinished(now: number, retainDoneMs: number): Promise<number> {
    const before = now - retainDoneMs;
    let total = 0;
    for (;;) {
      const [n, full] = await this.#write(async (tx) => {
        // Queues without their own retain_done_ms: jobs_finished from the oldest, passing over
        // the rows of queues that keep theirs longer.
        const shared = await tx`
          WITH f AS (
            SELECT id FROM jobs WHERE state IN ('done', 'cancelled') AND finished_at < ${before}
              AND queue NOT IN (SELECT name FROM queue_settings WHERE retain_done_ms IS NOT NULL)
            LIMIT ${CHUNK} FOR UPDATE SKIP LOCKED
          )
          DELETE FROM jobs j USING f WHERE j.id = f.id RETURNING j.id`;
        // Queues with their own retention: each one's finished jobs by jobs_browse.
        const done = await tx`
          WITH f AS (
            SELECT j.id FROM queue_settings s JOIN jobs j ON j.queue = s.name
            WHERE s.retain_done_ms IS NOT NULL AND j.state IN ('done', 'cancelled')
              AND j.finished_at < ${now}::bigint - s.retain_done_ms
            LIMIT ${CHUNK} FOR UPDATE OF j SKIP LOCKED
          )
          DELETE FROM jobs j USING f WHERE j.id = f.id RETURNING j.id`;
        const dead = await tx`
          WITH f AS (
            SELECT j.id FROM queue_settings s JOIN jobs j ON j.queue = s.name
            WHERE s.retain_dead_ms IS NOT NULL AND j.state = 'dead'
              AND j.finished_at < ${now}::bigint - s.retain_dead_ms
            LIMIT ${CHUNK} FOR UPDATE OF j SKIP LOCKED
          )
          DELETE FROM jobs j USING f WHERE j.id = f.id RETURNING j.id`;
        const full = [shared, done, dead].some((rows) => rows.length === CHUNK);
        return [shared.length + done.length + dead.length, full] as const;
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
    await this.#events.close();
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

/** One ack waiting for its shared statement. */
interface AckItem {
  id: number;
  token: string;
  result: string | null;
  now: number;
}

/**
 * Completes leased jobs, one statement for all: each ack that presents its job's current,
 * unexpired token completes it; a repeated ack of a done job with the token that completed it
 * answers the same; anything else is `lease_lost`, or `not_found` for an unknown id.
 */
async function ackMany(
  tx: TxSql,
  items: AckItem[],
): Promise<({ id: number; queue: string } | TegamiError)[]> {
  const rows = await tx<
    {
      k: number;
      queue: string | null;
      state: JobState | null;
      token: string | null;
      done: boolean;
    }[]
  >`
    WITH a AS (
      SELECT * FROM unnest(${items.map((i) => i.id)}::bigint[], ${
    items.map((i) => i.token)
  }::text[],
        ${items.map((i) => i.result)}::text[], ${items.map((i) => i.now)}::bigint[])
        WITH ORDINALITY AS a(id, token, result, now, k)
    ), j AS (
      SELECT jobs.id, jobs.queue, jobs.state, jobs.lease_token FROM jobs
      WHERE jobs.id IN (SELECT id FROM a)
    ), u AS (
      UPDATE jobs SET state = 'done', result = a.result, finished_at = a.now,
        lease_expires_at = NULL
      FROM a
      WHERE jobs.id = a.id AND jobs.state = 'leased' AND jobs.lease_token = a.token
        AND jobs.lease_expires_at > a.now
      RETURNING jobs.id, a.token
    )
    SELECT a.k, j.queue, j.state, j.lease_token AS token,
      EXISTS (SELECT 1 FROM u WHERE u.id = a.id AND u.token = a.token) AS done
    FROM a LEFT JOIN j ON j.id = a.id
    ORDER BY a.k`;
  // The statement read the jobs as they were when it began. A job it found leased with the
  // ack's token but did not complete may have been completed meanwhile by a transaction beside
  // this one (the same ack sent twice, through two transactions or two servers): read those
  // again, as they are now, so a repeated ack answers the same however the two overlapped.
  const again = rows.flatMap((row, i) =>
    !row.done && row.state === "leased" && row.token === items[i].token ? [items[i].id] : []
  );
  const current = again.length === 0
    ? new Map<number, { state: JobState; token: string | null }>()
    : new Map(
      (await tx<{ id: number; state: JobState; token: string | null }[]>`
        SELECT id, state, lease_token AS token FROM jobs WHERE id = ANY(${again}::bigint[])`)
        .map((row) => [row.id, row]),
    );
  return rows.map((row, i) => {
    const { id, token } = items[i];
    if (row.queue === null) return jobNotFound(id);
    if (row.done) return { id, queue: row.queue };
    const seen = current.get(id) ?? row;
    if (seen.state === "done" && seen.token === token) return { id, queue: row.queue };
    return leaseLost(id, "ack");
  });
}

/** One enqueue without keys waiting for its shared statement. */
interface EnqueueItem {
  queue: string;
  jobs: NewJob[];
  now: number;
}

/** Stores the jobs of several enqueues without keys with one INSERT. */
async function enqueueMany(
  tx: TxSql,
  news: BatchNews,
  items: EnqueueItem[],
): Promise<Enqueued[][]> {
  const queues: string[] = [];
  const states: JobState[] = [];
  const jobs: NewJob[] = [];
  const runAts: number[] = [];
  const nows: number[] = [];
  for (const item of items) {
    for (const job of item.jobs) {
      const state = initialState(job.run_at, item.now);
      queues.push(item.queue);
      states.push(state);
      jobs.push(job);
      runAts.push(state === "delayed" ? job.run_at : item.now);
      nows.push(item.now);
      if (state === "pending") news.ready.add(item.queue);
    }
  }
  // PostgreSQL inserts the rows in the SELECT's order and RETURNING answers them in that order.
  const inserted = await tx<{ id: number }[]>`
    INSERT INTO jobs (queue, state, priority, payload, max_attempts, run_at, lease_ms,
      backoff_base_ms, backoff_max_ms, created_at)
    SELECT t.queue, t.state, t.priority, t.payload,
      -- withQueueDefaults() (core/queue_settings.ts) in SQL: the job's own, else its queue's
      -- (s, from the row this transaction reads), else the server's.
      coalesce(t.max_attempts, s.max_attempts, ${DEFAULT_MAX_ATTEMPTS}::int), t.run_at,
      coalesce(t.lease_ms, s.lease_ms), coalesce(t.base_ms, s.backoff_base_ms),
      coalesce(t.max_ms, s.backoff_max_ms), t.now
    FROM unnest(
      ${queues}::text[], ${states}::text[], ${jobs.map((j) => j.priority)}::int[],
      ${jobs.map((j) => j.payload)}::text[], ${jobs.map((j) => j.max_attempts)}::int[],
      ${runAts}::bigint[], ${jobs.map((j) => j.lease_ms)}::bigint[],
      ${jobs.map((j) => j.backoff?.base_ms ?? null)}::bigint[],
      ${jobs.map((j) => j.backoff?.max_ms ?? null)}::bigint[], ${nows}::bigint[]
    ) WITH ORDINALITY AS t(queue, state, priority, payload, max_attempts, run_at, lease_ms,
      base_ms, max_ms, now, ord)
    LEFT JOIN queue_settings s ON s.name = t.queue
    ORDER BY t.ord
    RETURNING id`;
  let at = 0;
  return items.map((item) =>
    item.jobs.map(() => {
      const i = at++;
      return { id: inserted[i].id, deduplicated: false, state: states[i] };
    })
  );
}

/**
 * Ends leases without an ack (rows locked by the caller) as the lifecycle rules say: pending
 * at once, or dead.
 */
async function endLeases(
  tx: TxSql,
  ending: { row: JobRow; cause: LeaseEndCause }[],
  now: number,
): Promise<EndedLease[]> {
  const moves = ending.map(({ row, cause }) => ({
    id: row.id,
    next: afterLeaseEnd(attempted(row), cause, now),
  }));
  await unlease(tx, moves);
  return ending.map(({ row }, i) => ({
    id: row.id,
    queue: row.queue,
    token: row.lease_token ?? "",
    state: moves[i].next.state,
  }));
}

/** Writes leased jobs' moves to their next state (retry, or dead), in one statement. */
async function unlease(tx: TxSql, moves: { id: number; next: Transition }[]): Promise<void> {
  if (moves.length === 0) return;
  await tx`
    UPDATE jobs j SET state = m.state, last_error = m.error, attempts = m.attempts,
      lease_expires_at = NULL,
      run_at = CASE WHEN m.state = 'dead' THEN j.run_at ELSE m.run_at END,
      finished_at = CASE WHEN m.state = 'dead' THEN m.run_at ELSE j.finished_at END
    FROM unnest(${moves.map((m) => m.id)}::bigint[], ${moves.map((m) => m.next.state)}::text[],
      ${moves.map((m) => m.next.error)}::text[], ${moves.map((m) => m.next.attempts)}::int[],
      ${moves.map((m) => m.next.run_at)}::bigint[]) AS m(id, state, error, attempts, run_at)
    WHERE j.id = m.id`;
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
