/**
 * What the servers sharing one PostgreSQL database tell each other: NOTIFYs on one channel
 * per schema, a polling fallback, and consumer counts.
 *
 * - A batch's news goes out as `pg_notify` inside its own transaction (see pg_group_commit.ts):
 *   one message per batch (split only past PostgreSQL's 8,000-byte payload limit), never one
 *   per job, because every NOTIFY takes a cluster-wide lock at COMMIT.
 * - Each server LISTENs on a dedicated connection. The driver re-establishes it after a loss;
 *   every (re)connect, and every poll interval, emits `resync`, so a lost message only delays.
 * - Consumers: each server writes its own rows in `consumers` on the poll interval (how many
 *   subscribers it has on each queue and their summed prefetch) and reads the others' (rows not
 *   refreshed for {@linkcode PRESENCE_TTL_MS} belong to a server that is gone and are ignored).
 *
 * @module
 */

import type { StoreEvent } from "../store.ts";
import type { BatchNews } from "./pg_group_commit.ts";
import { PgWatches } from "./pg_watches.ts";
import { describePgError, type Sql, type TxSql } from "./pg_driver.ts";

/** A server's consumer rows older than this are ignored, ms. */
export const PRESENCE_TTL_MS = 10_000;

/**
 * How soon after its consumers change a server writes them and tells the others, who then read
 * them at once rather than at their next poll, ms (changes within it go together).
 */
const CHANGE_DELAY_MS = 20;

/** Largest NOTIFY payload sent (PostgreSQL refuses more than 8,000 bytes). */
const MAX_PAYLOAD = 7_000;

/** One NOTIFY's body. */
interface Message {
  /** The sending server. */
  i: string;
  /** Queues that gained ready jobs. */
  r?: string[];
  /** Leases ended: `[id, token, why]`. */
  e?: [number, string, string][];
  /** The sender's consumers changed: read them again. */
  c?: 1;
  /** Jobs the sender watches (pg_watches.ts). */
  w?: number[];
  /** Watched jobs that ended. */
  f?: number[];
  /** Progress of watched jobs: `[id, at, progress]`, the progress left out when large. */
  p?: [number, number, string | null][];
}

/** Longest progress carried in a NOTIFY; a larger one is read from the job. */
const MAX_PROGRESS_CARRIED = 1_000;

/** The channel name for a schema. */
export function channelOf(schema: string): string {
  return `tegami_${schema}`;
}

/** Sends a batch's news inside its transaction. */
export async function publishNews(
  tx: TxSql,
  channel: string,
  instance: string,
  news: BatchNews,
  watches: PgWatches | null = null,
): Promise<void> {
  // Remembered for a watch announced elsewhere that crosses this batch's ends (pg_watches.ts).
  watches?.ended(news.finished);
  for (const payload of encodeNews(instance, news, watches)) {
    await tx`SELECT pg_notify(${channel}, ${payload})`;
  }
}

/** The news as NOTIFY payloads, each under the size limit. */
export function encodeNews(
  instance: string,
  news: BatchNews,
  watches: PgWatches | null = null,
): string[] {
  const out: string[] = [];
  let message: Message = { i: instance };
  let size = 16;
  const flush = () => {
    if (
      message.r !== undefined || message.e !== undefined || message.f !== undefined ||
      message.p !== undefined
    ) out.push(JSON.stringify(message));
    message = { i: instance };
    size = 16;
  };
  for (const queue of news.ready) {
    if (size + queue.length + 4 > MAX_PAYLOAD) flush();
    (message.r ??= []).push(queue);
    size += queue.length + 4;
  }
  for (const ended of news.ended) {
    const cost = ended[1].length + 40;
    if (size + cost > MAX_PAYLOAD) flush();
    (message.e ??= []).push(ended);
    size += cost;
  }
  if (watches !== null) {
    for (const id of news.finished) {
      if (!watches.wanted(id)) continue;
      if (size + 20 > MAX_PAYLOAD) flush();
      (message.f ??= []).push(id);
      size += 20;
    }
    for (const [id, progress, at] of news.progress) {
      if (!watches.wanted(id)) continue;
      const carried = progress.length <= MAX_PROGRESS_CARRIED ? progress : null;
      const cost = 40 + 2 * (carried?.length ?? 0);
      if (size + cost > MAX_PAYLOAD) flush();
      (message.p ??= []).push([id, at, carried]);
      size += cost;
    }
  }
  flush();
  return out;
}

/** A payload from another server; null for one of ours or a bad payload. */
function decodeMessage(payload: string, instance: string): Message | null {
  let message: Message;
  try {
    message = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof message !== "object" || message === null || message.i === instance) return null;
  return message;
}

/** The events in a message from another server. */
function eventsOf(message: Message): StoreEvent[] {
  const events: StoreEvent[] = [];
  for (const queue of message.r ?? []) {
    if (typeof queue === "string") events.push({ kind: "ready", queue });
  }
  for (const id of message.f ?? []) {
    if (typeof id === "number") events.push({ kind: "ended", id });
  }
  for (const entry of message.p ?? []) {
    const [id, at, progress] = Array.isArray(entry) ? entry : [];
    if (
      typeof id === "number" && typeof at === "number" &&
      (typeof progress === "string" || progress === null)
    ) events.push({ kind: "progress", id, at, progress });
  }
  for (const entry of message.e ?? []) {
    const [id, token, why] = entry;
    if (
      typeof id === "number" && typeof token === "string" &&
      (why === "settled" || why === "cancelled" || why === "expired")
    ) events.push({ kind: "lease_ended", id, token, why });
  }
  return events;
}

/** Options of {@linkcode PgEvents}. */
export interface PgEventsOptions {
  /** The pool (the listener takes its own connection from the driver). */
  sql: Sql;
  /** The schema, for the channel and the consumer rows. */
  schema: string;
  /** This server's id. */
  instance: string;
  /** The polling fallback, ms. */
  pollMs: number;
  /** Reports failures (a refused heartbeat); must not throw. */
  onError: (what: string, error: unknown) => void;
}

/** A queue's subscribers on one or more servers: how many, and their summed prefetch. */
interface ConsumerCount {
  n: number;
  prefetch: number;
}

/** The listening half and the consumer counts of one server. */
export class PgEvents {
  readonly #o: PgEventsOptions;
  readonly #listeners = new Set<(event: StoreEvent) => void>();
  readonly #local = new Map<string, ConsumerCount>();
  /** Queues whose local count changed since the last heartbeat. */
  readonly #dirty = new Set<string>();
  #others = new Map<string, ConsumerCount>();
  #unlisten: (() => Promise<void>) | null = null;
  /** Who watches which job, here and elsewhere. */
  readonly watches: PgWatches;
  #timer: ReturnType<typeof setInterval> | null = null;
  /** Heartbeats between polls, when polls are further apart than the presence rows allow. */
  #presenceTimer: ReturnType<typeof setInterval> | null = null;
  /** The heartbeat due soon after a change of consumers (here or on another server). */
  #soonTimer: ReturnType<typeof setTimeout> | null = null;
  /** Whether the next heartbeat tells the others that this server's consumers changed. */
  #changed = false;
  #lastFull = 0;
  #beating: Promise<void> | null = null;
  /** When the last heartbeat started (performance.now() ms). */
  #beatAt = -Infinity;
  #closed = false;

  /** Makes the listening half; {@linkcode PgEvents.start} connects it. */
  constructor(options: PgEventsOptions) {
    this.#o = options;
    this.watches = new PgWatches(
      (message) => this.#notify(message),
      (error) => options.onError("announce watched jobs", error),
    );
  }

  /** Sends a message of this server's outside any batch. */
  async #notify(message: Omit<Message, "i">): Promise<void> {
    const { sql, instance, schema } = this.#o;
    await sql`SELECT pg_notify(${channelOf(schema)}, ${
      JSON.stringify({ ...message, i: instance })
    })`;
  }

  /** LISTENs (rejects if that fails) and starts the poll timer. */
  async start(): Promise<void> {
    const channel = channelOf(this.#o.schema);
    const meta = await this.#o.sql.listen(
      channel,
      (payload) => this.#received(payload),
      // After every reconnect: whatever was sent meanwhile is lost, look again.
      () => this.#emit({ kind: "resync" }),
    );
    this.#unlisten = meta.unlisten;
    this.watches.start();
    this.#timer = setInterval(() => this.#poll(), this.#o.pollMs);
    // The rows must be refreshed within PRESENCE_TTL_MS whatever --pg-poll says (up to a
    // minute): every other one of these beats is a full one (PRESENCE_TTL_MS / 3 apart at least).
    if (this.#o.pollMs > PRESENCE_TTL_MS / 4) {
      this.#presenceTimer = setInterval(() => this.#beat(), PRESENCE_TTL_MS / 4);
    }
    // The first one's failure is start()'s; a change heard meanwhile waits for it (#beating).
    this.#beatAt = performance.now();
    const first = this.#heartbeat();
    this.#beating = first.catch(() => {}).finally(() => this.#beating = null);
    await first;
  }

  /** Adds a listener; answers a function that removes it. */
  listen(listener: (event: StoreEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Hands the listeners news this server learned by itself (a backlog count). */
  tell(event: StoreEvent): void {
    this.#emit(event);
  }

  /** Tells the listeners to look at everything again (news may have been missed). */
  resync(): void {
    this.#emit({ kind: "resync" });
  }

  /**
   * Records this server's consumers of a queue and their summed prefetch (written at the next
   * heartbeat).
   */
  setConsumers(queue: string, n: number, prefetch: number): void {
    const was = this.#local.get(queue);
    if ((was?.n ?? 0) === n && (was?.prefetch ?? 0) === prefetch) return;
    if (n === 0) this.#local.delete(queue);
    else this.#local.set(queue, { n, prefetch });
    this.#dirty.add(queue);
    this.#changed = true;
    this.#beatSoon();
  }

  /** Consumers of a queue: this server's now, the others' as of the last heartbeat. */
  consumers(queue: string): number {
    return (this.#local.get(queue)?.n ?? 0) + (this.#others.get(queue)?.n ?? 0);
  }

  /** This server's consumers of a queue. */
  localConsumers(queue: string): number {
    return this.#local.get(queue)?.n ?? 0;
  }

  /** The summed prefetch of the other servers' consumers of a queue, as of the last heartbeat. */
  remotePrefetch(queue: string): number {
    return this.#others.get(queue)?.prefetch ?? 0;
  }

  /** Stops listening and polling and removes this server's consumer rows. */
  async close(): Promise<void> {
    this.#closed = true;
    this.watches.close();
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    if (this.#presenceTimer !== null) clearInterval(this.#presenceTimer);
    this.#presenceTimer = null;
    if (this.#soonTimer !== null) clearTimeout(this.#soonTimer);
    this.#soonTimer = null;
    await this.#beating;
    try {
      await this.#unlisten?.();
      await this.#o.sql`DELETE FROM consumers WHERE instance = ${this.#o.instance}`;
    } catch {
      // The rows age out on their own (PRESENCE_TTL_MS).
    }
  }

  #received(payload: string): void {
    const message = decodeMessage(payload, this.#o.instance);
    if (message === null) return;
    // Another server's consumers changed: read them now, unless a read started in the last
    // CHANGE_DELAY_MS (then within it: many servers' changes cost one read per interval) or one
    // is under way (it may predate the change: the next one follows it).
    if (message.c === 1 && !this.#closed && this.#timer !== null) {
      const recent = performance.now() - this.#beatAt < CHANGE_DELAY_MS;
      if (this.#beating === null && !recent) this.#beat();
      else this.#beatSoon();
    }
    if (Array.isArray(message.w)) {
      // Jobs ended here before the announcement arrived: tell the watcher now.
      const ended = this.watches.heard(message.w);
      if (ended.length > 0 && !this.#closed) {
        this.#notify({ f: ended }).catch((error) => this.#o.onError("tell ended jobs", error));
      }
    }
    for (const event of eventsOf(message)) this.#emit(event);
  }

  #emit(event: StoreEvent): void {
    if (this.#closed) return;
    for (const listener of this.#listeners) listener(event);
  }

  #poll(): void {
    this.#emit({ kind: "resync" });
    this.#beat();
  }

  /** A heartbeat within {@linkcode CHANGE_DELAY_MS}. */
  #beatSoon(): void {
    if (this.#closed || this.#timer === null || this.#soonTimer !== null) return;
    this.#soonTimer = setTimeout(() => {
      this.#soonTimer = null;
      // One under way may have read before the change: look again after it.
      if (this.#beating === null) this.#beat();
      else this.#beatSoon();
    }, CHANGE_DELAY_MS);
  }

  #beat(): void {
    if (this.#beating !== null || this.#closed) return;
    this.#beatAt = performance.now();
    this.#beating = this.#heartbeat()
      .catch((error) => this.#o.onError("heartbeat", error))
      .finally(() => this.#beating = null);
  }

  /** Writes this server's changed counts (all of them now and then) and reads the others'. */
  async #heartbeat(): Promise<void> {
    const { sql, instance } = this.#o;
    const now = Date.now();
    const full = now - this.#lastFull >= PRESENCE_TTL_MS / 3;
    const queues = full ? [...new Set([...this.#local.keys(), ...this.#dirty])] : [...this.#dirty];
    this.#dirty.clear();
    // Taken with the queues it covers: a change made while this beat writes is the next one's.
    const changed = this.#changed;
    this.#changed = false;
    let was: Map<string, ConsumerCount>;
    try {
      if (queues.length > 0) {
        const counts = queues.map((q) => this.#local.get(q)?.n ?? 0);
        const prefetches = queues.map((q) => this.#local.get(q)?.prefetch ?? 0);
        await sql`
          INSERT INTO consumers (instance, queue, n, prefetch, seen_at)
          SELECT ${instance}, q, n, p, ${now}::bigint
          FROM unnest(${queues}::text[], ${counts}::int[], ${prefetches}::int[]) AS t(q, n, p)
          ON CONFLICT (instance, queue) DO UPDATE
            SET n = excluded.n, prefetch = excluded.prefetch, seen_at = excluded.seen_at`;
        await sql`DELETE FROM consumers WHERE instance = ${instance} AND n = 0`;
      }
      if (changed) {
        const message: Message = { i: instance, c: 1 };
        await sql`SELECT pg_notify(${channelOf(this.#o.schema)}, ${JSON.stringify(message)})`;
      }
      if (full) {
        this.#lastFull = now;
        await sql`DELETE FROM consumers WHERE seen_at < ${now - 6 * PRESENCE_TTL_MS}`;
      }
      const rows = await sql<{ queue: string; n: number; prefetch: number }[]>`
        SELECT queue, sum(n)::bigint AS n, sum(prefetch)::bigint AS prefetch FROM consumers
        WHERE instance <> ${instance} AND seen_at >= ${now - PRESENCE_TTL_MS}
        GROUP BY queue`;
      was = this.#others;
      this.#others = new Map(
        rows.map((row) => [row.queue, { n: row.n, prefetch: row.prefetch }]),
      );
    } catch (error) {
      for (const queue of queues) this.#dirty.add(queue);
      if (changed) this.#changed = true;
      throw new Error(`Cannot refresh consumer counts: ${describePgError(error)}`, {
        cause: error,
      });
    }
    // Told once the counts are in place: a listener's failure is not the heartbeat's.
    for (const queue of new Set([...was.keys(), ...this.#others.keys()])) {
      if (was.get(queue)?.prefetch !== this.#others.get(queue)?.prefetch) {
        this.#emit({ kind: "consumers", queue });
      }
    }
  }
}
