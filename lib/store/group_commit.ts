/**
 * Group commit: writes that arrive together share one transaction and one fsync.
 *
 * Callers {@linkcode GroupCommit.submit} a synchronous operation. The first submission schedules
 * a flush on the next macrotask, so everything submitted meanwhile — typically every request
 * that arrived while the previous commit was fsyncing — runs in the same transaction. Each
 * operation runs inside a savepoint: an operation that throws a `TegamiError` is undone alone
 * and its caller gets that error; anything else (disk full, I/O error) aborts the whole
 * transaction and every caller in it gets `unavailable`. No caller is answered before COMMIT
 * returns, and there is never an `await` inside the transaction.
 *
 * @module
 */

import { TegamiError } from "../errors.ts";

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

interface Pending {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** Called after each commit attempt with the batch size, the time it took and any failure. */
export type CommitObserver = (size: number, ms: number, error: unknown) => void;

/** Batches synchronous operations into shared transactions. */
export class GroupCommit {
  #db: Transactor;
  #queue: Pending[] = [];
  #scheduled = false;
  #observer: CommitObserver;
  #idle: (() => void)[] = [];

  /** Wraps a database; `observer` sees every commit. */
  constructor(db: Transactor, observer: CommitObserver) {
    this.#db = db;
    this.#observer = observer;
  }

  /** Runs `operation` in the next shared transaction; resolves after it is committed. */
  submit<T>(operation: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ run: operation, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setTimeout(() => this.flush(), 0);
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
    const outcomes: { ok: boolean; value: unknown }[] = new Array(batch.length);
    const started = performance.now();
    try {
      this.#db.begin();
      for (let i = 0; i < batch.length; i++) {
        this.#db.mark();
        try {
          outcomes[i] = { ok: true, value: batch[i].run() };
          this.#db.release();
        } catch (error) {
          if (!(error instanceof TegamiError)) throw error;
          this.#db.undo();
          outcomes[i] = { ok: false, value: error };
        }
      }
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

  #notifyIdle(): void {
    if (this.#queue.length > 0) return;
    const idle = this.#idle;
    this.#idle = [];
    for (const resolve of idle) resolve();
  }
}
