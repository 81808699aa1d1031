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
import { isPostgresUrl } from "./postgres/pg_url.ts";
import { SqliteStore } from "./sqlite/sqlite_store.ts";
import type { Store } from "./store.ts";

/** What the server hands a store factory besides the configuration. */
export interface StoreContext {
  /** The lifecycle policy built from the configuration. */
  policy: LifecyclePolicy;
  /** Sees every commit (batch size, duration, failure), for metrics. */
  onCommit: CommitObserver;
  /** Hears how long each fsync of SQLite's write-ahead log took (ms), for metrics. */
  onWalSync?: (ms: number) => void;
  /** Reports failures of a store's own background work (PostgreSQL's heartbeats). */
  onBackgroundError?: (what: string, error: unknown) => void;
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

/** The command that installs the PostgreSQL driver next to a source checkout. */
export const INSTALL_DRIVER = "npx --yes deno@2.9.6 task install:postgres";

/**
 * Opens the store `config.db` names: a `postgres://` URL opens the PostgreSQL store (loaded
 * here, on demand, so a SQLite server never loads its driver), any other URL is refused, and
 * anything else is a SQLite file.
 */
export const openStore: StoreFactory = async (config, context): Promise<Store> => {
  if (isPostgresUrl(config.db)) {
    let module: typeof import("./postgres/pg_store.ts");
    try {
      module = await import("./postgres/pg_store.ts");
    } catch (error) {
      throw new Error(
        `Cannot open database "${redactUrl(config.db)}": the PostgreSQL driver is not ` +
          `installed (${(error as Error).message.split("\n")[0]}); run: ${INSTALL_DRIVER}`,
      );
    }
    return await module.PgStore.open({
      url: config.db,
      schema: config.pgSchema,
      poolSize: config.pgPool,
      pollMs: config.pgPollMs,
      policy: context.policy,
      onCommit: context.onCommit,
      onBackgroundError: context.onBackgroundError,
    });
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(config.db)) {
    throw new Error(
      `Cannot open database "${redactUrl(config.db)}": expected a SQLite file path or a ` +
        "postgres:// URL",
    );
  }
  return SqliteStore.open({
    path: config.db,
    sync: config.sync,
    pageSize: config.pageSize,
    onCommit: context.onCommit,
    onWalSync: context.onWalSync,
    policy: context.policy,
  });
};
