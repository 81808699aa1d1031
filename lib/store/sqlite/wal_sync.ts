/**
 * Durability off the event loop. SQLite runs with `synchronous=NORMAL` (a commit writes its WAL
 * frames but does not fsync), and this module fsyncs the WAL on Deno's blocking thread pool
 * before any caller of a commit is answered. The event loop keeps reading requests and frames,
 * and sending what earlier fsyncs released, while the disk flushes; the next group commit waits
 * for the fsync's end (`whenIdle`), and one `fdatasync` covers every commit made before it
 * started. Under load most of an fsync's time is waiting for a core and for the loop to hear it;
 * doing it on the main thread instead was measured slower (performance.md).
 *
 * The guarantee is the same as `synchronous=FULL`: an answered write is on stable storage. A
 * process crash between COMMIT and the fsync loses nothing either (the frames are in the page
 * cache); only power loss can drop a commit whose callers were never answered.
 *
 * @module
 */

import { TegamiError } from "../../core/errors.ts";
import { setImmediate } from "node:timers";

interface Waiter {
  seq: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Tracks commits and makes them durable with shared, asynchronous fsyncs of one file. */
export class WalSync {
  readonly #path: string;
  readonly #onSync: ((ms: number) => void) | undefined;
  #file: Deno.FsFile | null = null;
  #committed = 0;
  #synced = 0;
  #syncing = false;
  /**
   * From a sync's end until its idle callbacks run: its waiters are being answered. Counts as
   * busy: a callback or a sync asked for meanwhile waits for that moment, behind those queued.
   */
  #answering = false;
  #waiters: Waiter[] = [];
  #syncs = 0;
  #failed: TegamiError | null = null;
  #whenIdle: (() => void)[] = [];
  /** The promise handed out for the newest commit, shared by all its callers. */
  #latest: { seq: number; promise: Promise<void> } | null = null;

  /**
   * Syncs the file at `path` (the `-wal` file; opened on first use, once it exists); `onSync`
   * hears how long each successful fsync took, in milliseconds.
   */
  constructor(path: string, onSync?: (ms: number) => void) {
    this.#path = path;
    this.#onSync = onSync;
  }

  /** Records that a commit finished; call right after COMMIT returns. */
  committed(): void {
    this.#committed++;
  }

  /** fsyncs done so far. */
  get syncs(): number {
    return this.#syncs;
  }

  /**
   * Resolves once every commit recorded so far is on stable storage. After one failed fsync it
   * always rejects: the kernel may have dropped the dirty pages of the WAL, so a later "good"
   * fsync proves nothing about the frames before it (WAL replay stops at the first bad frame).
   * Nothing is acknowledged again until a restart recovers from what is really on disk.
   */
  durable(): Promise<void> {
    if (this.#failed !== null) return Promise.reject(this.#failed);
    const seq = this.#committed;
    if (this.#synced >= seq) return Promise.resolve();
    // Every caller of one commit waits for the same thing: one promise, one waiter.
    if (this.#latest?.seq === seq) return this.#latest.promise;
    const promise = new Promise<void>((resolve, reject) => {
      this.#waiters.push({ seq, resolve, reject });
      this.#kick();
    });
    this.#latest = { seq, promise };
    return promise;
  }

  /**
   * Runs `callback` once no sync is running: at once (as a microtask) if none is and none just
   * ended, else right after the last one's waiters are answered, in the same turn of the event
   * loop (before any timer). A commit made then is covered by the next fsync, which could not
   * have started earlier anyway: deferring commits to this moment puts everything that arrived
   * during the fsync in one commit, and lets the answers and pushes the fsync released go out
   * first.
   */
  whenIdle(callback: () => void): void {
    if (!this.#syncing && !this.#answering) queueMicrotask(callback);
    else this.#whenIdle.push(callback);
  }

  /** The fsync failure that stopped all writes, if any. */
  get failure(): TegamiError | null {
    return this.#failed;
  }

  /** True while a sync runs, its waiters are being answered, or callers wait for one. */
  get busy(): boolean {
    return this.#syncing || this.#answering || this.#waiters.length > 0;
  }

  /** Waits for pending syncs and closes the file. */
  async close(): Promise<void> {
    while (this.busy) await new Promise((resolve) => setTimeout(resolve, 1));
    this.#file?.close();
    this.#file = null;
  }

  #kick(): void {
    // The running sync re-checks the waiters when it ends; one that just ended, once its own
    // waiters are answered (with the commit that follows them, so one fsync covers both).
    if (this.#syncing || this.#answering) return;
    this.#syncing = true;
    const target = this.#committed;
    this.#sync().then(
      () => {
        this.#syncs++;
        this.#synced = Math.max(this.#synced, target);
        this.#syncing = false;
        this.#answering = true;
        const waiting = this.#waiters;
        this.#waiters = [];
        for (const w of waiting) {
          if (w.seq <= this.#synced) w.resolve();
          else this.#waiters.push(w);
        }
        // The next commit waits for the answers: its consumers get their jobs, and its producers
        // their answers, a commit's CPU sooner, so their next acks and requests come back in time
        // for the commit after it. setImmediate, not setTimeout(0): Deno's zero timer fires
        // milliseconds later, and the disk would wait that long at every commit.
        setImmediate(() => {
          this.#answering = false;
          this.#runWhenIdle();
          if (this.#waiters.length > 0) this.#kick();
        });
      },
      (error) => {
        this.#syncing = false;
        const failure = new TegamiError(
          "unavailable",
          "Cannot make the write durable: fsync of the write-ahead log failed; " +
            "the server takes no more writes until it is restarted",
          { cause: error },
        );
        // Recorded before the waiting flushes run, so they see it and commit nothing.
        this.#failed = failure;
        this.#runWhenIdle();
        const waiting = this.#waiters;
        this.#waiters = [];
        for (const w of waiting) w.reject(failure);
      },
    );
  }

  #runWhenIdle(): void {
    const callbacks = this.#whenIdle;
    this.#whenIdle = [];
    for (const callback of callbacks) callback();
  }

  async #sync(): Promise<void> {
    this.#file ??= await Deno.open(this.#path, { read: true });
    const started = performance.now();
    await this.#file.syncData();
    this.#onSync?.(performance.now() - started);
  }
}
