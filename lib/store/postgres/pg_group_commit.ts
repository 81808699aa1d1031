/**
 * Group commit on PostgreSQL: writes that arrive while the transactions in flight are running
 * share the next one, so a burst of N writes from one server costs one COMMIT (one WAL flush)
 * instead of N.
 *
 * Up to `inFlight` transactions run at once, each on its own connection: writes wait for a
 * transaction only while every slot is busy. A server's writes are then not held up behind one
 * transaction's round trips and WAL flush, and PostgreSQL flushes commits that arrive together
 * with one write. Transactions in flight are independent: each caller is answered after its
 * own transaction commits (or fails), and commits may land in any order. So a write must not
 * count on one submitted before it and not yet answered having committed — or being visible to
 * it — unless both are in the same transaction (writes submitted in the same task are: they
 * start out together). What needs the other's effects waits for its answer first (the broker
 * wakes a queue again after the commit that made jobs ready). Rows two transactions both
 * change are serialized by PostgreSQL's row locks; a deadlock between them is retried as below.
 *
 * An operation is an async function given the transaction's `sql` and the batch's
 * {@linkcode BatchNews}. Operations of a batch run in submission order inside one transaction.
 * One that is a single SQL statement (at most followed by reads that change nothing) may be
 * submitted `pipelined`: a run of such operations
 * is sent at once, without waiting for each answer (one round trip for the run), which is safe
 * because each statement is atomic and sees every statement sent before it. Any other
 * operation runs alone, after the ones before it have answered, so nothing interleaves with
 * its reads and writes. The rule every operation keeps: it throws a `TegamiError` (a stale
 * token, an unknown job) only before it has written anything, so that error is answered to its
 * caller alone and the others commit. Any other failure (a lost connection, an error from the
 * database) aborts the transaction, and every caller in it gets `unavailable`; a deadlock or
 * serialization failure first runs the whole batch again, a few times.
 *
 * After a failure that is not the database refusing one statement (a lost connection, a
 * restart under way), the writer is "down": batches are refused with `unavailable` at once, and
 * a probe (a plain query on a new pool, with backoff) decides when it is up again; that pool
 * then replaces the old one. This is also a guard: the driver's transactions can hang for ever
 * once their connection has met a server still starting up, so no connection that lived
 * through an outage is used again; and a batch that takes longer than
 * {@linkcode BATCH_DEADLINE_MS} is answered `unavailable` and counts as an outage.
 *
 * A connection lost once COMMIT has been sent leaves the outcome unknown: the database may have
 * committed and the answer been lost. Those callers get `unavailable` saying so (asking the
 * database afterwards is no proof: a transaction id whose records never reached the disk is
 * handed out again after a crash, so `pg_xact_status` can report another transaction's commit;
 * tried, and the restart campaign found acknowledged jobs missing). A connection lost before
 * COMMIT aborts the transaction: those callers get `unavailable`, and nothing was written.
 *
 * The news collected by a batch — queues that gained ready jobs, leases that ended — is sent as
 * NOTIFYs inside the same transaction, once per batch and queue: PostgreSQL delivers them only
 * if the transaction commits.
 *
 * @module
 */

import { OUTCOME_UNKNOWN, TegamiError } from "../../core/errors.ts";
import type { Released, RemoteLeaseEnd } from "../store.ts";
import { asStoreError, isRetryable, type Sql, type TxSql, withDeadline } from "./pg_driver.ts";
import postgres from "postgres";

/** What a batch tells the other servers once it commits. */
export class BatchNews {
  /** Queues that gained ready jobs. */
  readonly ready = new Set<string>();
  /** What the batch did to flows beyond its callers' jobs, for this server once committed. */
  readonly released: Released = { ready: [], due: null, ended: [] };
  /** Jobs the batch ended (done, dead, cancelled): watchers elsewhere may wait for them. */
  readonly finished: number[] = [];
  /** Progress the batch stored: `[id, progress, at]`. */
  readonly progress: [number, string, number][] = [];
  /** Leases ended here that another server may hold: `[id, token, why]`. */
  readonly ended: [number, string, RemoteLeaseEnd][] = [];

  /** True when there is nothing to tell. */
  get empty(): boolean {
    return this.ready.size === 0 && this.ended.length === 0 && this.finished.length === 0 &&
      this.progress.length === 0;
  }
}

/** One write: runs inside the batch's transaction. */
export type PgOperation<T> = (tx: TxSql, news: BatchNews) => Promise<T>;

interface Pending {
  run: PgOperation<unknown>;
  pipelined: boolean;
  /** How many callers' writes it carries (a coalesced statement carries many). */
  weight: () => number;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** Called after each commit attempt with the batch size, the time it took and any failure. */
export type PgCommitObserver = (size: number, ms: number, error: unknown) => void;

const one = () => 1;

/** How often a batch that hit a deadlock or serialization failure runs again. */
const RETRIES = 3;

/** The longest a batch may take before its callers are told `unavailable`, ms. */
export const BATCH_DEADLINE_MS = 15_000;

/** First and longest wait between probes of a writer that is down, ms. */
const PROBE_MIN_MS = 50;
const PROBE_MAX_MS = 250;

/** The longest a probe may take, ms. */
const PROBE_DEADLINE_MS = 3_000;

/** Batches async operations into shared transactions, up to `inFlight` of them at once. */
export class PgGroupCommit {
  readonly #open: () => Sql;
  #sql: Sql;
  /** Pools given up on (a hung transaction): ended at close. */
  readonly #abandoned: Sql[] = [];
  /** Why the writer is down, or null while it is up. */
  #down: TegamiError | null = null;
  #closed = false;
  #probe: ReturnType<typeof setTimeout> | null = null;
  readonly #observer: PgCommitObserver;
  readonly #onUp: () => void;
  readonly #publish: (tx: TxSql, news: BatchNews) => Promise<void>;
  readonly #committed: (news: BatchNews) => void;
  #queue: Pending[] = [];
  /** Transactions in flight. */
  #running = 0;
  /** A start of the waiting writes is scheduled (a microtask). */
  #scheduled = false;
  readonly #inFlight: number;
  #idle: (() => void)[] = [];

  /**
   * Writes through pools made by `open` (a new one replaces one whose transaction hung).
   * `publish` sends a batch's news inside its transaction, just before COMMIT; `observer` sees
   * every commit attempt; `onUp` is called when writes work again after the database was
   * out of reach (whatever was refused meanwhile may need another look). `inFlight` is the
   * most transactions run at once (at most the pool's connections).
   */
  constructor(
    open: () => Sql,
    publish: (tx: TxSql, news: BatchNews) => Promise<void>,
    observer: PgCommitObserver,
    onUp: () => void = () => {},
    inFlight = 1,
    committed: (news: BatchNews) => void = () => {},
  ) {
    this.#committed = committed;
    this.#inFlight = Math.max(1, Math.floor(inFlight));
    this.#onUp = onUp;
    this.#open = open;
    this.#sql = open();
    this.#publish = publish;
    this.#observer = observer;
  }

  /**
   * Runs `operation` in the next shared transaction; resolves after it is committed.
   * `pipelined` promises that the operation is one SQL statement (see the module doc);
   * `weight` answers, once it ran, how many callers' writes it carried (for the commit figures).
   */
  submit<T>(operation: PgOperation<T>, pipelined = false, weight = one): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({
        run: operation as PgOperation<unknown>,
        pipelined,
        weight,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      this.#schedule();
    });
  }

  /**
   * Starts the waiting writes in a microtask, if a transaction slot is free: writes issued in
   * the same task start out together; those arriving while every slot is busy wait for the
   * next free one, which is where batches grow under load.
   */
  #schedule(): void {
    if (this.#scheduled || this.#running >= this.#inFlight || this.#queue.length === 0) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      if (this.#running >= this.#inFlight || this.#queue.length === 0) return;
      const batch = this.#queue;
      this.#queue = [];
      this.#running++;
      this.#commit(batch).finally(() => {
        this.#running--;
        if (this.#queue.length > 0) this.#schedule();
        else if (this.#running === 0) this.#wakeIdle();
      });
    });
  }

  #wakeIdle(): void {
    const idle = this.#idle;
    this.#idle = [];
    for (const resolve of idle) resolve();
  }

  /** Stops probing and closes the writer's pools. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#probe !== null) clearTimeout(this.#probe);
    this.#probe = null;
    this.#down = new TegamiError("unavailable", "Cannot write: the store is closed");
    const ends = [this.#sql, ...this.#abandoned].map((sql) => sql.end({ timeout: 1 }));
    // A pool whose connection hung may never finish ending: give up on it after a while.
    await Promise.race([Promise.all(ends), new Promise((r) => setTimeout(r, 3_000))]);
  }

  /** True while writes are refused because the database could not be reached. */
  get down(): boolean {
    return this.#down !== null;
  }

  /** Operations waiting for the next transaction. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Resolves once nothing is waiting or running. */
  drained(): Promise<void> {
    if (this.#running === 0 && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /**
   * The writer lost the database: refuse writes until a probe gets through. The pool is given
   * up (its connections may have met the server starting up, after which the driver's
   * transactions can hang), and each probe is a new pool: the first that answers becomes the
   * writer's pool.
   */
  #fell(failure: TegamiError): void {
    if (this.#down !== null) return;
    this.#down = failure;
    this.#abandon(this.#sql);
    let wait = PROBE_MIN_MS;
    const probe = () => {
      this.#probe = null;
      const candidate = this.#open();
      withDeadline(candidate`SELECT 1`, PROBE_DEADLINE_MS, "probe the database").then(
        () => {
          if (this.#closed) {
            this.#abandon(candidate);
            return;
          }
          this.#sql = candidate;
          this.#down = null;
          this.#onUp();
        },
        () => {
          this.#abandon(candidate);
          if (this.#closed) return;
          wait = Math.min(wait * 2, PROBE_MAX_MS);
          this.#probe = setTimeout(probe, wait);
        },
      );
    };
    this.#probe = setTimeout(probe, wait);
  }

  /** Ends a pool in the background; close() waits (a while) for the ones still ending. */
  #abandon(sql: Sql): void {
    this.#abandoned.push(sql);
    sql.end({ timeout: 0 }).catch(() => {});
  }

  async #commit(batch: Pending[]): Promise<void> {
    const started = performance.now();
    for (let attempt = 0;; attempt++) {
      // Checked before each attempt: a transaction beside this one may have lost the database.
      if (this.#down !== null) {
        for (const pending of batch) pending.reject(this.#down);
        return;
      }
      let outcomes: { ok: boolean; value: unknown }[];
      const pool = this.#sql;
      // Set once every operation has run and COMMIT is on its way: a connection lost from then
      // on leaves the commit's fate unknown (it may have been made and its answer lost).
      let committing = false;
      let news = new BatchNews();
      try {
        outcomes = await withDeadline(
          pool.begin(async (tx) => {
            news = new BatchNews();
            const out: { ok: boolean; value: unknown }[] = new Array(batch.length);
            const run = async (i: number) => {
              try {
                out[i] = { ok: true, value: await batch[i].run(tx, news) };
              } catch (error) {
                if (!(error instanceof TegamiError)) throw error;
                out[i] = { ok: false, value: error };
              }
            };
            for (let i = 0; i < batch.length;) {
              if (!batch[i].pipelined) {
                await run(i++);
                continue;
              }
              const started: Promise<void>[] = [];
              while (i < batch.length && batch[i].pipelined) started.push(run(i++));
              // Every one settles before the first failure is thrown: none is left running.
              const settled = await Promise.allSettled(started);
              for (const result of settled) if (result.status === "rejected") throw result.reason;
            }
            if (!news.empty) await this.#publish(tx, news);
            committing = true;
            return out;
          }),
          BATCH_DEADLINE_MS,
          "commit the write",
        );
      } catch (error) {
        if (attempt < RETRIES && isRetryable(error)) continue;
        this.#observer(weigh(batch), performance.now() - started, error);
        const failure = committing && lostDatabase(error)
          ? new TegamiError(
            "unavailable",
            "Cannot tell whether the write was committed: the connection to the database was " +
              `lost during COMMIT, so it ${OUTCOME_UNKNOWN}; retry it (a keyed enqueue is ` +
              "deduplicated, an ack with the same token answers the same)",
            { cause: error },
          )
          : asStoreError(error, "commit the write");
        for (const pending of batch) pending.reject(failure);
        // A transaction on a pool already given up on says nothing about the current one.
        if (lostDatabase(error) && pool === this.#sql) this.#fell(failure);
        return;
      }
      this.#observer(weigh(batch), performance.now() - started, null);
      this.#committed(news);
      for (let i = 0; i < batch.length; i++) {
        if (outcomes[i].ok) batch[i].resolve(outcomes[i].value);
        else batch[i].reject(outcomes[i].value);
      }
      return;
    }
  }
}

/** The callers' writes a batch carried. */
function weigh(batch: Pending[]): number {
  let n = 0;
  for (const pending of batch) n += pending.weight();
  return n;
}

/**
 * Whether `error` means the database is out of reach (no connection, a connection cut, a
 * server shutting down, starting up or full) rather than refusing one statement.
 */
function lostDatabase(error: unknown): boolean {
  if (!(error instanceof postgres.PostgresError)) return true;
  return /^(08|57P|53)/.test(error.code);
}
