/**
 * The SQLite store run on its own thread. {@linkcode ThreadedStore} implements
 * {@linkcode Store} on the server's thread by sending each call to a Worker that owns a
 * `SqliteStore` (`store_thread.ts`) and resolving it with the answer. The event loop that
 * parses HTTP requests and WebSocket frames no longer runs SQLite statements, commits or WAL
 * checkpoints, so under load the two share the machine's cores instead of one thread doing
 * both (measured in docs/performance.md).
 *
 * Semantics are the SQLite store's, unchanged: calls made in one turn of the event loop travel
 * together and share one group commit; answers come after the commit and its fsync; ready
 * counts arrive with the answers of the commits that changed them, so `readyHint` is as exact
 * as it is in one thread.
 *
 * @module
 */

import { TegamiError } from "../errors.ts";
import type { Delivery, Enqueued, Job, NewJob } from "../job.ts";
import type { CommitObserver } from "./group_commit.ts";
import { sqliteFileSizes } from "./sqlite_store.ts";
import {
  type CancelResult,
  type ClaimWant,
  type CommitStats,
  copyCommitStats,
  countCommit,
  emptyCommitStats,
  type EndedLease,
  type LeaseRef,
  type NackRequest,
  type NackResult,
  type QueueCounts,
  type Store,
  type TickResult,
} from "./store.ts";
import {
  type FromStoreThread,
  fromWire,
  type StoreThreadOptions,
  type ThreadCall,
  type ThreadMethod,
  type ToStoreThread,
} from "./thread_protocol.ts";

/** Options of {@linkcode ThreadedStore.open}. */
export interface ThreadedStoreOptions extends StoreThreadOptions {
  /** Sees every commit (batch size, duration, failure). */
  onCommit?: CommitObserver;
  /** Told once if the store thread dies; every call fails with `unavailable` from then on. */
  onFailure?: (error: Error) => void;
}

/** After this long without a message to the thread, the next call is sent at once, ms. */
const QUIET_AFTER_MS = 1;

interface Waiting {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** The SQLite store on a Worker thread, behind the {@linkcode Store} interface. */
export class ThreadedStore implements Store {
  readonly #worker: Worker;
  readonly #path: string;
  readonly #onCommit: CommitObserver | undefined;
  readonly #onFailure: ((error: Error) => void) | undefined;
  readonly #waiting = new Map<number, Waiting>();
  readonly #ready = new Map<string, number>();
  readonly #stats: CommitStats = emptyCommitStats();
  #outbox: ThreadCall[] = [];
  #sendScheduled = false;
  #nextId = 1;
  #lastSentAt = 0;
  readonly #sendNow = () => this.#send();
  /** Set once the thread is gone (closed or failed): every call rejects with it. */
  #gone: TegamiError | null = null;
  #closing: Promise<void> | null = null;
  #onClosed: (() => void) | null = null;
  /** The engine and its version. */
  readonly engine: string;

  private constructor(worker: Worker, engine: string, options: ThreadedStoreOptions) {
    this.#worker = worker;
    this.engine = engine;
    this.#path = options.path;
    this.#onCommit = options.onCommit;
    this.#onFailure = options.onFailure;
    worker.onmessage = (event: MessageEvent<FromStoreThread>) => this.#receive(event.data);
    worker.onerror = (event) => {
      event.preventDefault();
      this.#fail(new Error(`The store thread failed: ${event.message}`));
    };
  }

  /**
   * Starts the store thread and opens the database there. Rejects with a plain `Error` with a
   * one-line reason when the database cannot be opened (held by another server, say).
   */
  static open(options: ThreadedStoreOptions): Promise<ThreadedStore> {
    const worker = new Worker(new URL("./store_thread.ts", import.meta.url), { type: "module" });
    return new Promise((resolve, reject) => {
      worker.onerror = (event) => {
        event.preventDefault();
        worker.terminate();
        reject(new Error(`Cannot start the store thread: ${event.message}`));
      };
      worker.onmessage = (event: MessageEvent<FromStoreThread>) => {
        const message = event.data;
        if (message.type === "failed") {
          worker.terminate();
          reject(new Error(message.message));
        } else if (message.type === "opened") {
          const store = new ThreadedStore(worker, message.engine, options);
          for (const [queue, ready] of message.ready) store.#ready.set(queue, ready);
          resolve(store);
        }
      };
      const { path, sync, unsafeFault, defaultLeaseMs, backoff } = options;
      const open: ToStoreThread = {
        type: "open",
        options: { path, sync, unsafeFault, defaultLeaseMs, backoff },
      };
      worker.postMessage(open);
    });
  }

  enqueue(queue: string, jobs: NewJob[], now: number): Promise<Enqueued[]> {
    return this.#call("enqueue", [queue, jobs, now]);
  }

  claim(queue: string, max: number, lease_ms: number | null, now: number): Promise<Delivery[]> {
    return this.#call("claim", [queue, max, lease_ms, now]);
  }

  claimFair(queue: string, wants: ClaimWant[], now: number): Promise<Delivery[][]> {
    return this.#call("claimFair", [queue, wants, now]);
  }

  ack(
    id: number,
    token: string,
    result: string | null,
    now: number,
  ): Promise<{ id: number; queue: string }> {
    return this.#call("ack", [id, token, result, now]);
  }

  nack(id: number, token: string, request: NackRequest, now: number): Promise<NackResult> {
    return this.#call("nack", [id, token, request, now]);
  }

  extend(
    id: number,
    token: string,
    lease_ms: number | null,
    now: number,
  ): Promise<{ id: number; expires_at: number }> {
    return this.#call("extend", [id, token, lease_ms, now]);
  }

  checkpoint(id: number, token: string, data: string, now: number): Promise<{ id: number }> {
    return this.#call("checkpoint", [id, token, data, now]);
  }

  get(id: number): Promise<Job | null> {
    return this.#call("get", [id]);
  }

  cancel(id: number, now: number): Promise<CancelResult> {
    return this.#call("cancel", [id, now]);
  }

  setPaused(queue: string, paused: boolean): Promise<void> {
    return this.#call("setPaused", [queue, paused]);
  }

  stats(queue?: string): Promise<QueueCounts[]> {
    return this.#call("stats", queue === undefined ? [] : [queue]);
  }

  listDead(queue: string, limit: number, after: number): Promise<Job[]> {
    return this.#call("listDead", [queue, limit, after]);
  }

  requeueDead(queue: string, ids: number[] | null, now: number): Promise<number> {
    return this.#call("requeueDead", [queue, ids, now]);
  }

  tick(now: number): Promise<TickResult> {
    return this.#call("tick", [now]);
  }

  release(leases: LeaseRef[], now: number): Promise<EndedLease[]> {
    return this.#call("release", [leases, now]);
  }

  readyHint(queue: string): number {
    return this.#ready.get(queue) ?? 0;
  }

  nextDeadline(): Promise<number | null> {
    return this.#call("nextDeadline", []);
  }

  sweepFinished(before: number): Promise<number> {
    return this.#call("sweepFinished", [before]);
  }

  probeWritable(): Promise<void> {
    return this.#call("probeWritable", []);
  }

  commitStats(): CommitStats {
    return copyCommitStats(this.#stats);
  }

  fileSizes(): { database: number; wal: number } | null {
    return sqliteFileSizes(this.#path);
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutDown();
    return this.#closing;
  }

  async #shutDown(): Promise<void> {
    if (this.#gone !== null) return;
    this.#send(); // calls made before close() go first; the thread drains them
    const closed = new Promise<void>((resolve) => this.#onClosed = resolve);
    this.#post({ type: "close" });
    await closed;
    this.#worker.terminate();
    this.#gone = new TegamiError("unavailable", "Cannot use the store: it is closed");
    this.#rejectAll(this.#gone);
  }

  #call<T>(method: ThreadMethod, args: unknown[]): Promise<T> {
    if (this.#gone !== null) return Promise.reject(this.#gone);
    return new Promise<T>((resolve, reject) => {
      const id = this.#nextId++;
      this.#waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.#outbox.push({ id, method, args });
      if (this.#sendScheduled) return;
      this.#sendScheduled = true;
      // A message costs both threads far more than a call in it: when the last one went out
      // just now (load), wait for the rest of this event-loop pass and send its calls together;
      // when the thread has been quiet, send at the end of this task (latency).
      if (performance.now() - this.#lastSentAt > QUIET_AFTER_MS) queueMicrotask(this.#sendNow);
      else setTimeout(this.#sendNow, 0);
    });
  }

  #send(): void {
    this.#sendScheduled = false;
    this.#lastSentAt = performance.now();
    if (this.#outbox.length === 0) return;
    const calls = this.#outbox;
    this.#outbox = [];
    this.#post({ type: "calls", calls });
  }

  #post(message: ToStoreThread): void {
    this.#worker.postMessage(message);
  }

  #receive(message: FromStoreThread): void {
    if (message.type === "closed") {
      this.#onClosed?.();
      return;
    }
    if (message.type !== "replies") return;
    for (const [size, ms, failure] of message.commits) {
      if (failure === null) countCommit(this.#stats, size, ms);
      this.#onCommit?.(size, ms, failure === null ? null : new Error(failure));
    }
    for (const [queue, ready] of message.ready) this.#ready.set(queue, ready);
    for (const reply of message.replies) {
      const waiting = this.#waiting.get(reply.id);
      if (waiting === undefined) continue;
      this.#waiting.delete(reply.id);
      if (reply.error === undefined) waiting.resolve(reply.value);
      else waiting.reject(fromWire(reply.error));
    }
  }

  #fail(error: Error): void {
    if (this.#gone !== null) return;
    this.#worker.terminate();
    this.#gone = new TegamiError(
      "unavailable",
      "Cannot use the store: its thread failed; restart the server",
      { cause: error },
    );
    this.#rejectAll(this.#gone);
    this.#onClosed?.();
    this.#onFailure?.(error);
  }

  #rejectAll(error: TegamiError): void {
    const waiting = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const w of waiting) w.reject(error);
  }
}
