/**
 * The store thread: a Worker that owns the SQLite store, so statements, commits and WAL
 * checkpoints run beside the event loop that serves HTTP and WebSockets instead of on it. It
 * opens a {@linkcode SqliteStore} when told to, runs the calls it receives (each message's calls
 * are submitted together and share a group commit) and sends the answers back, batched per turn
 * of its own event loop. {@linkcode ThreadedStore} is the other half; `thread_protocol.ts` has
 * the messages.
 *
 * @module
 */

import { retryDelayMs } from "../backoff.ts";
import { SqliteStore } from "./sqlite_store.ts";
import {
  type CommitSeen,
  type FromStoreThread,
  THREAD_METHODS,
  type ThreadCall,
  type ThreadReply,
  type ToStoreThread,
  toWire,
} from "./thread_protocol.ts";

/** The part of the worker's global scope this module uses. */
interface WorkerScope {
  postMessage(message: FromStoreThread): void;
  onmessage: ((event: MessageEvent<ToStoreThread>) => void) | null;
}

const scope = globalThis as unknown as WorkerScope;
const methods = new Set<string>(THREAD_METHODS);
let store: SqliteStore | null = null;
let replies: ThreadReply[] = [];
let commits: CommitSeen[] = [];
let sending = false;

function send(): void {
  sending = false;
  if (store === null) return;
  const message: FromStoreThread = {
    type: "replies",
    replies,
    commits,
    ready: store.readyChanges(),
  };
  replies = [];
  commits = [];
  scope.postMessage(message);
}

function answer(reply: ThreadReply): void {
  replies.push(reply);
  if (sending) return;
  sending = true;
  // Answers released by one commit settle in the same round of microtasks: one message.
  queueMicrotask(send);
}

function run(open: SqliteStore, call: ThreadCall): void {
  let result: Promise<unknown>;
  try {
    if (!methods.has(call.method)) throw new Error(`Unknown store method "${call.method}"`);
    const method = open[call.method] as (...args: unknown[]) => Promise<unknown>;
    result = method.apply(open, call.args);
  } catch (error) {
    result = Promise.reject(error);
  }
  result.then(
    (value) => answer({ id: call.id, value }),
    (error) => answer({ id: call.id, error: toWire(error) }),
  );
}

scope.onmessage = (event) => {
  const message = event.data;
  switch (message.type) {
    case "open": {
      const { options } = message;
      try {
        store = SqliteStore.open({
          path: options.path,
          sync: options.sync,
          unsafeFault: options.unsafeFault,
          onCommit: (size, ms, error) => {
            commits.push([size, ms, error === null ? null : toWire(error).message]);
          },
          policy: {
            defaultLeaseMs: options.defaultLeaseMs,
            retryDelayMs: (attempt, own) => retryDelayMs(attempt, own ?? options.backoff),
          },
        });
        scope.postMessage({ type: "opened", engine: store.engine, ready: store.readyChanges() });
      } catch (error) {
        scope.postMessage({ type: "failed", message: (error as Error).message });
      }
      return;
    }
    case "calls":
      if (store === null) throw new Error("The store thread got calls before it was opened");
      for (const call of message.calls) run(store, call);
      return;
    case "close":
      if (store === null) {
        scope.postMessage({ type: "closed" });
        return;
      }
      store.close().then(() => {
        if (replies.length > 0 || commits.length > 0) send();
        scope.postMessage({ type: "closed" });
      });
      return;
  }
};
