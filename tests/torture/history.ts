/**
 * The history of a crash campaign: every operation a client invoked and how it ended, every
 * delivery, every connection that opened or closed, every disruption of the server, and the
 * final contents of the database. The checker (`checker.ts`) reads nothing else, so a history
 * can be written by hand to test the checker.
 *
 * Times are `Date.now()` of the campaign process; the server runs on the same machine and
 * stamps `expires_at` with the same clock, so the two can be compared (within a few ms).
 *
 * @module
 */

/** How an operation whose answer never came (connection cut, timeout) is recorded. */
export type Outcome = "ok" | "fail" | "info";

/** One job as a producer sent it: a unique id (`uid`), and whether `key` = `uid` was set. */
export interface SentJob {
  /** The job's unique id, carried in its payload (and its key, when keyed). */
  uid: string;
  /** True when the job was sent with `key: uid` (a retry then deduplicates). */
  keyed: boolean;
}

/** An event of the history. */
export type Event =
  /**
   * A server is listening (again); `epoch` counts starts from 1. With several servers on one
   * database, `server` says which (0, 1, …); absent means 0, as on every server event.
   */
  | { type: "server_start"; at: number; epoch: number; server?: number }
  /** A server was SIGKILLed (recorded just before the signal). */
  | { type: "server_kill"; at: number; epoch: number; server?: number }
  /** A server was sent SIGTERM (recorded just before the signal): a graceful stop. */
  | { type: "server_stop"; at: number; epoch: number; server?: number }
  /** A server stopped by SIGTERM exited with `code`. */
  | { type: "server_exit"; at: number; epoch: number; code: number; server?: number }
  /** A server exited by itself, with `code`: a failure (it is started again). */
  | { type: "server_died"; at: number; epoch: number; code: number; server?: number }
  /** A server was SIGSTOPped (recorded just before the signal). */
  | { type: "server_pause"; at: number; epoch: number; server?: number }
  /** A server was SIGCONTed. */
  | { type: "server_resume"; at: number; epoch: number; server?: number }
  /**
   * The database server itself was restarted as after a crash (`pg_ctl restart -m immediate`,
   * recorded just before); the tegami servers stayed up.
   */
  | { type: "store_restart"; at: number }
  /** A producer sent an enqueue of one job or a batch (`batch` true sends `{jobs:[…]}`). */
  | { type: "enqueue"; at: number; op: number; jobs: SentJob[]; batch: boolean }
  /** The enqueue answered 2xx: one result per job, in order. */
  | {
    type: "enqueue_ok";
    at: number;
    op: number;
    results: { id: number; deduplicated: boolean }[];
  }
  /** The enqueue answered an error: nothing was stored. */
  | { type: "enqueue_fail"; at: number; op: number; status: number; code: string }
  /** The enqueue's outcome is unknown (connection error, timeout). */
  | { type: "enqueue_info"; at: number; op: number; error: string }
  /** A consumer's WebSocket to `server` (absent: 0) opened (`conn` is unique per socket). */
  | { type: "connect"; at: number; conn: number; consumer: number; server?: number }
  /**
   * A consumer's socket closed. `dropped`: the consumer closed it on purpose (recorded before
   * closing, so before any redelivery the close causes); `lost`: it was closed under it.
   */
  | { type: "disconnect"; at: number; conn: number; cause: "dropped" | "lost" }
  /**
   * A job frame arrived, or a job came in an HTTP lease answer (then `conn` is negative: a
   * pseudo-connection per HTTP consumer). `payload_ok` is false when the payload is not as sent.
   * `server` (absent: 0) is the server that leased it. `at` is when the campaign read it, which
   * may be well after the server sent it (a starved campaign reads its sockets late, and not
   * in the order the frames were sent); `lease_ms` is the lease length its consumer asked for,
   * so `expires_at - lease_ms` is the server's clock when it claimed the job.
   */
  | {
    type: "deliver";
    at: number;
    conn: number;
    server?: number;
    id: number;
    uid: string;
    token: string;
    attempt: number;
    expires_at: number;
    lease_ms?: number;
    payload_ok: boolean;
  }
  /** An `expired` frame arrived for a job this connection held. */
  | { type: "expired"; at: number; conn: number; id: number }
  /**
   * A consumer sent an ack or nack. `forged` marks a probe with a token the server never issued
   * (it must be refused).
   */
  | {
    type: "settle";
    at: number;
    op: number;
    conn: number;
    kind: "ack" | "nack";
    id: number;
    token: string;
    forged: boolean;
  }
  /** The ack or nack answered `ok`. */
  | { type: "settle_ok"; at: number; op: number; state: string }
  /** The ack or nack answered an error (`lease_lost` for a stale token). */
  | { type: "settle_fail"; at: number; op: number; code: string }
  /** The ack or nack's outcome is unknown (the socket closed before the answer). */
  | { type: "settle_info"; at: number; op: number; error: string }
  /** The database after the final drain and a clean stop, read with the store-neutral inspector. */
  | {
    type: "final";
    at: number;
    integrity: string;
    jobs: { id: number; uid: string; state: string; attempts: number }[];
  };

/** An event without its time, as a recorder takes it. */
export type Unstamped = Event extends infer E ? E extends Event ? Omit<E, "at"> : never : never;

/** The payload of the job `uid`: the uid and a check field derived from it. */
export function payloadFor(uid: string): { uid: string; check: number } {
  return { uid, check: checksum(uid) };
}

/** Whether `payload` is exactly what {@linkcode payloadFor} made for its uid. */
export function payloadIntact(payload: unknown): payload is { uid: string; check: number } {
  if (typeof payload !== "object" || payload === null) return false;
  const p = payload as Record<string, unknown>;
  return typeof p.uid === "string" && p.check === checksum(p.uid) &&
    Object.keys(p).length === 2;
}

/** A small string hash (FNV-1a, 32 bits). */
function checksum(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** An append-only history; each event is stamped with `Date.now()` when recorded. */
export class History {
  /** The events, in the order they happened. */
  readonly events: Event[] = [];
  #ops = 0;

  /** A fresh operation number, to pair an invocation with its outcome. */
  nextOp(): number {
    return ++this.#ops;
  }

  /** Records an event now. */
  add(event: Unstamped): void {
    this.events.push({ ...event, at: Date.now() } as Event);
  }
}
