/**
 * Opening the store a configuration names: the default {@linkcode StoreFactory} of the server.
 * This is the one place that knows which engines exist; everything above it sees a `Store`.
 *
 * @module
 */

import type { ServeConfig } from "../config/serve_config.ts";
import { retryDelayMs } from "../core/backoff.ts";
import type { LifecyclePolicy } from "../core/lifecycle.ts";
import type { CommitObserver } from "./group_commit.ts";
import { SqliteStore } from "./sqlite/sqlite_store.ts";
import type { Store } from "./store.ts";

/** What the server hands a store factory besides the configuration. */
export interface StoreContext {
  /** The lifecycle policy built from the configuration. */
  policy: LifecyclePolicy;
  /** Sees every commit (batch size, duration, failure), for metrics. */
  onCommit: CommitObserver;
}

/** Opens the store for a configuration; throws (or rejects) with a one-line reason. */
export type StoreFactory = (config: ServeConfig, context: StoreContext) => Store | Promise<Store>;

/** The lifecycle policy of a configuration: its lease length and retry backoff. */
export function policyOf(config: ServeConfig): LifecyclePolicy {
  const backoff = { base_ms: config.backoffBaseMs, max_ms: config.backoffMaxMs };
  return {
    defaultLeaseMs: config.leaseMs,
    retryDelayMs: (attempt, own) => retryDelayMs(attempt, own ?? backoff),
  };
}

/** A database URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@");
}

/** Opens the SQLite file named by `config.db`; a URL is refused rather than taken as a path. */
export const openStore: StoreFactory = (config, context) => {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(config.db)) {
    throw new Error(`Cannot open database "${redactUrl(config.db)}": expected a SQLite file path`);
  }
  return SqliteStore.open({
    path: config.db,
    sync: config.sync,
    onCommit: context.onCommit,
    policy: context.policy,
  });
};
