/**
 * Watched jobs across the servers sharing one PostgreSQL database. A server whose callers wait
 * for or watch a job (core/job_watch.ts) tells the others which ids it watches; a server that
 * ends one of those jobs, or stores progress of one, says so in the batch's NOTIFY
 * (pg_events.ts), so a waiter on any server is woken from the commit that ended the job, with
 * no polling. Nobody watching costs nothing: ends of unwatched jobs are never sent.
 *
 * The announcement and an end can cross: a server may end a job just before it hears that
 * another watches it. So each server remembers the jobs it ended in the last
 * {@linkcode RECENT_MS} and answers an announcement of one of them with its end at once; the
 * watcher has read the job after announcing, so whichever comes first, it learns of the end.
 * Announcements are repeated while the watch lasts and forgotten {@linkcode WATCH_TTL_MS}
 * after the last.
 *
 * @module
 */

/** How long an announcement holds, ms: announcements are repeated within a third of it. */
export const WATCH_TTL_MS = 10_000;

/** How long a server remembers the jobs it ended, for announcements that crossed them, ms. */
export const RECENT_MS = 10_000;

/** Most ids in one announcement (a NOTIFY's payload stays far under its limit). */
const IDS_PER_MESSAGE = 400;

/** Most recently ended ids remembered (a bound on memory under a flood of acks). */
const MAX_RECENT = 200_000;

/** Who watches what, here and on the other servers. */
export class PgWatches {
  /** Ids watched here, with how many watches each. */
  readonly #local = new Map<number, number>();
  /** Ids another server watches, with when that stops holding (performance.now() ms). */
  readonly #remote = new Map<number, number>();
  /** Ids ended here lately, oldest first, with when. */
  readonly #recent = new Map<number, number>();
  /** New local ids not yet announced. */
  readonly #unannounced = new Set<number>();
  readonly #send: (message: { w?: number[]; f?: number[] }) => Promise<void>;
  readonly #onError: (error: unknown) => void;
  #timer: ReturnType<typeof setInterval> | null = null;
  #soon = false;
  #closed = false;

  /** Announces through `send` (a NOTIFY on the pool). */
  constructor(
    send: (message: { w?: number[]; f?: number[] }) => Promise<void>,
    onError: (error: unknown) => void,
  ) {
    this.#send = send;
    this.#onError = onError;
  }

  /** Starts repeating the announcements. */
  start(): void {
    this.#timer = setInterval(() => this.#announce([...this.#local.keys()]), WATCH_TTL_MS / 3);
  }

  /** Stops. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** A watch of job `id` here began. */
  watch(id: number): void {
    const n = this.#local.get(id) ?? 0;
    this.#local.set(id, n + 1);
    if (n > 0) return;
    this.#unannounced.add(id);
    if (this.#soon) return;
    this.#soon = true;
    queueMicrotask(() => {
      this.#soon = false;
      const ids = [...this.#unannounced];
      this.#unannounced.clear();
      this.#announce(ids);
    });
  }

  /** A watch of job `id` here ended. */
  unwatch(id: number): void {
    const n = this.#local.get(id) ?? 0;
    if (n <= 1) {
      this.#local.delete(id);
      this.#unannounced.delete(id);
    } else {
      this.#local.set(id, n - 1);
    }
  }

  /** Another server watches `ids`: answers the ones this server ended lately (to tell it). */
  heard(ids: readonly unknown[]): number[] {
    const until = performance.now() + WATCH_TTL_MS;
    const ended: number[] = [];
    for (const id of ids) {
      if (typeof id !== "number") continue;
      this.#remote.set(id, until);
      if (this.#recent.has(id)) ended.push(id);
    }
    return ended;
  }

  /** Whether another server watches job `id`. */
  wanted(id: number): boolean {
    const until = this.#remote.get(id);
    if (until === undefined) return false;
    if (until >= performance.now()) return true;
    this.#remote.delete(id);
    return false;
  }

  /** Jobs ended here (in a batch about to commit): remembered for crossing announcements. */
  ended(ids: readonly number[]): void {
    const now = performance.now();
    for (const id of ids) {
      this.#recent.delete(id);
      this.#recent.set(id, now);
    }
    for (const [id, at] of this.#recent) {
      if (at >= now - RECENT_MS && this.#recent.size <= MAX_RECENT) break;
      this.#recent.delete(id);
    }
    if (this.#remote.size > 0) {
      for (const [id, until] of this.#remote) if (until < now) this.#remote.delete(id);
    }
  }

  #announce(ids: number[]): void {
    if (this.#closed || ids.length === 0) return;
    for (let i = 0; i < ids.length; i += IDS_PER_MESSAGE) {
      this.#send({ w: ids.slice(i, i + IDS_PER_MESSAGE) }).catch(this.#onError);
    }
  }
}
