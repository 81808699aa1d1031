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
 * The one exception is a test-only fault ({@linkcode GroupCommitOptions.unsafeAnswerBeforeCommitMs},
 * `serve --unsafe-fault ack-before-commit`): it answers callers before COMMIT, as a broken queue
 * would, so the crash campaign can show that its checker catches lost acknowledged writes.
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
   * TEST ONLY, it breaks durability on purpose: when above 0, each caller is answered as soon
   * as its operation ran, and the transaction stays open (taking later operations too) for this
   * many ms before COMMIT, so a crash in that window loses writes that were already answered.
   * @default 0
   */
  unsafeAnswerBeforeCommitMs?: number;
  /**
   * Decides when a batch is committed: called with `flush` when the first operation of a new
   * batch arrives; everything submitted until `flush` runs joins that batch.
   * @default the next macrotask (`setTimeout(flush, 0)`)
   */
  schedule?: (flush: () => void) => void;
}

/** Batches synchronous operations into shared transactions. */
export class GroupCommit {
  #db: Transactor;
  #queue: Pending[] = [];
  #scheduled = false;
  #observer: CommitObserver;
  #idle: (() => void)[] = [];
  readonly #unsafeMs: number;
  readonly #schedule: (flush: () => void) => void;
  readonly #flush = () => this.flush();
  /** Under the unsafe fault: operations in the transaction left open, and its commit timer. */
  #unsafeOpen: { size: number; started: number; timer: ReturnType<typeof setTimeout> } | null =
    null;

  /** Wraps a database; `observer` sees every commit. */
  constructor(db: Transactor, observer: CommitObserver, options: GroupCommitOptions = {}) {
    this.#db = db;
    this.#observer = observer;
    this.#unsafeMs = options.unsafeAnswerBeforeCommitMs ?? 0;
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
    if (this.#queue.length === 0 && this.#unsafeOpen === null) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Commits everything submitted so far, now. */
  flush(): void {
    this.#scheduled = false;
    const batch = this.#queue;
    if (batch.length === 0) return;
    this.#queue = [];
    if (this.#unsafeMs > 0) {
      this.#flushUnsafe(batch);
      return;
    }
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

  /** The test-only fault: run and answer now, COMMIT later (see the options). */
  #flushUnsafe(batch: Pending[]): void {
    try {
      let open = this.#unsafeOpen;
      if (open === null) {
        this.#db.begin();
        const timer = setTimeout(() => this.#commitUnsafe(), this.#unsafeMs);
        open = this.#unsafeOpen = { size: 0, started: performance.now(), timer };
      }
      for (const pending of batch) {
        this.#db.mark();
        try {
          const value = pending.run();
          this.#db.release();
          open.size++;
          pending.resolve(value); // before COMMIT: this is the fault
        } catch (error) {
          if (!(error instanceof TegamiError)) throw error;
          this.#db.undo();
          pending.reject(error);
        }
      }
    } catch (error) {
      if (this.#unsafeOpen !== null) clearTimeout(this.#unsafeOpen.timer);
      this.#unsafeOpen = null;
      this.#db.rollback();
      const failure = new TegamiError("unavailable", "Cannot commit the write", { cause: error });
      for (const pending of batch) pending.reject(failure); // no effect on those answered
      this.#notifyIdle();
    }
  }

  #commitUnsafe(): void {
    const open = this.#unsafeOpen;
    if (open === null) return;
    this.#unsafeOpen = null;
    try {
      this.#db.commit();
      this.#observer(open.size, performance.now() - open.started, null);
    } catch (error) {
      this.#db.rollback();
      this.#observer(open.size, performance.now() - open.started, error);
    }
    this.#notifyIdle();
  }

  #notifyIdle(): void {
    if (this.#queue.length > 0 || this.#unsafeOpen !== null) return;
    const idle = this.#idle;
    this.#idle = [];
    for (const resolve of idle) resolve();
  }
}
