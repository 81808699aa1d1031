/**
 * Group commit: writes that arrive together share one transaction and one fsync.
 *
 * Callers {@linkcode GroupCommit.submit} a synchronous operation. The first submission schedules
 * a flush (by default on the next macrotask; the store paces it by its fsyncs), and everything
 * submitted meanwhile runs in the same transaction. An operation that throws a `TegamiError` is
 * undone alone and its caller gets that error (the batch reruns with savepoints from that
 * operation on; the common case pays for none); anything else (disk full, I/O error) aborts the
 * whole transaction and every caller in it gets `unavailable`. No caller is answered before
 * COMMIT returns, and there is never an `await` inside the transaction.
 *
 * @module
 */

import { TegamiError } from "../core/errors.ts";

/** What group commit needs from a database. */
export interface Transactor {
  /** Starts the write transaction (`BEGIN IMMEDIATE`). */
  begin(): void;
  /** Commits it; throws if the commit failed. */
  commit(): void;
  /** Rolls back the whole transaction; must not throw. */
  rollback(): void;
  /** Marks the start of one operation (a savepoint). */
  mark(): void;
  /** Keeps the operation's changes. */
  release(): void;
  /** Undoes the operation's changes. */
  undo(): void;
}

/**
 * What a store needs from whatever batches its writes into transactions:
 * {@linkcode GroupCommit} in production; the crash campaign's positive controls put a faulty one
 * in its place (under `tests/`) to prove their checker catches a broken queue.
 */
export interface Committer {
  /** Runs `operation` in a transaction; resolves with its value once that is committed. */
  submit<T>(operation: () => T): Promise<T>;
  /** Resolves once nothing is waiting to be committed. */
  drained(): Promise<void>;
  /** Operations waiting for the next flush. */
  readonly waiting: number;
}

/** Builds a {@linkcode Committer} over a database; `schedule` paces its flushes. */
export type CommitterFactory = (
  db: Transactor,
  observer: CommitObserver,
  schedule: (flush: () => void) => void,
) => Committer;

interface Pending {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** What one operation of a batch came to: its value, or the `TegamiError` it threw. */
interface OperationResult {
  ok: boolean;
  value: unknown;
}

/** Called after each commit attempt with the batch size, the time it took and any failure. */
export type CommitObserver = (size: number, ms: number, error: unknown) => void;

/** Options of {@linkcode GroupCommit}. */
export interface GroupCommitOptions {
  /**
   * Decides when a batch is committed: called with `flush` when the first operation of a new
   * batch arrives; everything submitted until `flush` runs joins that batch.
   * @default the next macrotask (`setTimeout(flush, 0)`)
   */
  schedule?: (flush: () => void) => void;
}

/** Batches synchronous operations into shared transactions. */
export class GroupCommit implements Committer {
  #db: Transactor;
  #queue: Pending[] = [];
  #scheduled = false;
  #observer: CommitObserver;
  #idle: (() => void)[] = [];
  readonly #schedule: (flush: () => void) => void;
  readonly #flush = () => this.flush();

  /** Wraps a database; `observer` sees every commit. */
  constructor(db: Transactor, observer: CommitObserver, options: GroupCommitOptions = {}) {
    this.#db = db;
    this.#observer = observer;
    this.#schedule = options.schedule ?? ((flush) => setTimeout(flush, 0));
  }

  /** Runs `operation` in the next shared transaction; resolves after it is committed. */
  submit<T>(operation: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ run: operation, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        this.#schedule(this.#flush);
      }
    });
  }

  /** Operations waiting for the next flush. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Resolves once nothing is waiting to be committed. */
  drained(): Promise<void> {
    if (this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Commits everything submitted so far, now. */
  flush(): void {
    this.#scheduled = false;
    const batch = this.#queue;
    if (batch.length === 0) return;
    this.#queue = [];
    const started = performance.now();
    let outcomes: OperationResult[];
    try {
      outcomes = this.#runAll(batch);
      this.#db.commit();
    } catch (error) {
      this.#db.rollback();
      this.#observer(batch.length, performance.now() - started, error);
      const failure = new TegamiError(
        "unavailable",
        "Cannot commit the write: the database refused it (disk full or I/O error); retry later",
        { cause: error },
      );
      for (const pending of batch) pending.reject(failure);
      this.#notifyIdle();
      return;
    }
    this.#observer(batch.length, performance.now() - started, null);
    for (let i = 0; i < batch.length; i++) {
      const outcome = outcomes[i];
      if (outcome.ok) batch[i].resolve(outcome.value);
      else batch[i].reject(outcome.value);
    }
    this.#notifyIdle();
  }

  /**
   * Runs the batch inside one open transaction and answers each operation's outcome. Operations
   * run bare at first: a savepoint costs two statements, as much as a small write itself, and
   * almost every operation succeeds. When a bare operation throws a `TegamiError`, its partial
   * writes cannot be undone alone, so the transaction is rolled back and the batch runs again
   * with a savepoint around that operation and every later one. Operations only touch the
   * database, so running one again is safe; each retry guards an earlier operation, so it ends.
   */
  #runAll(batch: Pending[]): OperationResult[] {
    let guardedFrom = batch.length;
    for (;;) {
      this.#db.begin();
      const outcomes: OperationResult[] = new Array(batch.length);
      let failedBare = -1;
      for (let i = 0; i < batch.length; i++) {
        const guarded = i >= guardedFrom;
        if (guarded) this.#db.mark();
        try {
          outcomes[i] = { ok: true, value: batch[i].run() };
          if (guarded) this.#db.release();
        } catch (error) {
          if (!(error instanceof TegamiError)) throw error;
          if (!guarded) {
            failedBare = i;
            break;
          }
          this.#db.undo();
          outcomes[i] = { ok: false, value: error };
        }
      }
      if (failedBare < 0) return outcomes;
      this.#db.rollback();
      guardedFrom = failedBare;
    }
  }

  #notifyIdle(): void {
    if (this.#queue.length > 0) return;
    const idle = this.#idle;
    this.#idle = [];
    for (const resolve of idle) resolve();
  }
}
