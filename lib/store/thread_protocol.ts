/**
 * The messages between {@linkcode ThreadedStore} (the server's thread) and the store thread
 * (`store_thread.ts`, a Worker that owns the SQLite store). Everything here is plain data that
 * structured clone carries; errors cross as code and message and are rebuilt on arrival.
 *
 * Calls made in one turn of the server's event loop travel in one `calls` message and are
 * submitted together, so they share one group commit, exactly as they would in one thread.
 * Answers travel back in `replies` messages, each carrying the commits seen since the last one
 * (for metrics) and the new ready counts of the queues they changed (for
 * {@linkcode Store.readyHint}), applied before any answer of the message is delivered.
 *
 * @module
 */

import { type ErrorCode, TegamiError } from "../errors.ts";
import type { Backoff } from "../job.ts";

/** The store methods that cross to the thread: every asynchronous one but close(). */
export const THREAD_METHODS = [
  "enqueue",
  "claim",
  "claimFair",
  "ack",
  "nack",
  "extend",
  "checkpoint",
  "get",
  "cancel",
  "setPaused",
  "stats",
  "listDead",
  "requeueDead",
  "tick",
  "release",
  "nextDeadline",
  "sweepFinished",
  "probeWritable",
] as const;

/** One of {@linkcode THREAD_METHODS}. */
export type ThreadMethod = typeof THREAD_METHODS[number];

/** How the thread opens its store: the SQLite options, with the policy as plain values. */
export interface StoreThreadOptions {
  /** The database file, or `:memory:`. */
  path: string;
  /** `--sync`. */
  sync: "full" | "normal";
  /** TEST ONLY fault, as in `SqliteStoreOptions`. */
  unsafeFault: "ack-before-commit" | "any-token" | null;
  /** The server's default lease length, ms. */
  defaultLeaseMs: number;
  /** The server's retry backoff, for jobs without their own. */
  backoff: Backoff;
}

/** A store method called from the server's thread. */
export interface ThreadCall {
  /** Matches the reply. */
  id: number;
  /** The method. */
  method: ThreadMethod;
  /** Its arguments. */
  args: unknown[];
}

/** An error as it crosses threads. */
export interface WireError {
  /** The `TegamiError` code, or null for anything else (it becomes `internal`). */
  code: ErrorCode | null;
  /** The message. */
  message: string;
  /** The job it is about, if any. */
  id?: number;
  /** The cause's description, if any. */
  cause?: string;
}

/** The outcome of one call. */
export interface ThreadReply {
  /** The call's id. */
  id: number;
  /** The value, when it resolved. */
  value?: unknown;
  /** The error, when it rejected. */
  error?: WireError;
}

/** One commit attempt: batch size, ms, and the failure's description or null. */
export type CommitSeen = [size: number, ms: number, failure: string | null];

/** Server thread → store thread. */
export type ToStoreThread =
  | { type: "open"; options: StoreThreadOptions }
  | { type: "calls"; calls: ThreadCall[] }
  | { type: "close" };

/** Store thread → server thread. */
export type FromStoreThread =
  | { type: "opened"; engine: string; ready: [string, number][] }
  | { type: "failed"; message: string }
  | {
    type: "replies";
    replies: ThreadReply[];
    commits: CommitSeen[];
    ready: [string, number][];
  }
  | { type: "closed" };

function describe(error: unknown): string {
  if (error instanceof Error) {
    return error.cause === undefined ? error.message : `${error.message}: ${describe(error.cause)}`;
  }
  return String(error);
}

/** Turns anything thrown into a {@linkcode WireError}. */
export function toWire(error: unknown): WireError {
  if (error instanceof TegamiError) {
    const wire: WireError = { code: error.code, message: error.message };
    if (error.id !== undefined) wire.id = error.id;
    if (error.cause !== undefined) wire.cause = describe(error.cause);
    return wire;
  }
  return { code: null, message: describe(error) };
}

/** Rebuilds a thrown value from a {@linkcode WireError}: a `TegamiError`, or a plain `Error`. */
export function fromWire(wire: WireError): Error {
  if (wire.code === null) return new Error(wire.message);
  return new TegamiError(wire.code, wire.message, {
    id: wire.id,
    cause: wire.cause === undefined ? undefined : new Error(wire.cause),
  });
}
