/**
 * The behaviour suite every {@linkcode Store} must pass, in the manner of riverqueue's
 * `riverdrivertest.Exercise`: the SQLite store runs it always, the PostgreSQL store runs the
 * same cases. It speaks only through the `Store` interface and picks every time itself (no
 * sleeping), so a case that passes here passes for the same reason on any engine.
 *
 * The cases live by area under `suite/`, one module each, sharing `suite/fixtures.ts`; this
 * module is the one entry point, {@linkcode exerciseStore}, that registers them all for a store.
 *
 * The store under test must be built with {@linkcode SUITE_POLICY}: the lease and backoff
 * cases rely on its numbers.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Store, StoreCapabilities } from "../../lib/store/store.ts";
import type { SharedTest, SuiteCases, Test } from "./suite/fixtures.ts";
import { ackNackCases } from "./suite/ack_nack.ts";
import { cancelRunNowCases } from "./suite/cancel_run_now.ts";
import { claimCases } from "./suite/claim.ts";
import { claimOrderCases } from "./suite/claim_order.ts";
import { commitCloseCases } from "./suite/commits_close.ts";
import { crossServerCases } from "./suite/cross_server.ts";
import { deadLetterCases } from "./suite/dead_letters.ts";
import { dedupCases } from "./suite/dedup.ts";
import { enqueueCases } from "./suite/enqueue.ts";
import { fairShareCases } from "./suite/fair_shares.ts";
import { findJobsCases } from "./suite/find_jobs.ts";
import { flowCases } from "./suite/flows.ts";
import { groupCases } from "./suite/groups.ts";
import { leaseWriteCases } from "./suite/lease_writes.ts";
import { limitCases } from "./suite/limits.ts";
import { listingCases } from "./suite/listing.ts";
import { scheduleCases } from "./suite/schedules.ts";
import { settingsStatsCases } from "./suite/settings_stats.ts";
import { sweepCases } from "./suite/sweep.ts";
import { tickReleaseCases } from "./suite/tick_release.ts";

export { HANDED_ALL, HANDED_NONE, newJob, queueSettings, SUITE_POLICY } from "./suite/fixtures.ts";
export { assertSweepSkipsKeptJobs, KEPT_FINISHED_AT } from "./suite/sweep.ts";

/**
 * A fresh, empty store and a way to dispose of it (which must also accept a closed store).
 * A store with the `shared` capability also answers `peer`: another store on the same
 * database, as a second server would open it, closed by `cleanup` too.
 */
export type OpenStore = () => Promise<{
  store: Store;
  cleanup(): Promise<void>;
  peer?: () => Promise<Store>;
}>;

/** Options of {@linkcode exerciseStore}. */
export interface ExerciseOptions {
  /**
   * What the store can do. Cases that need a capability the store lacks are registered as
   * ignored, their name saying which capability (`[needs shared]`), so the run shows them.
   */
  capabilities: StoreCapabilities;
  /** Registers every case as ignored (the engine is not reachable here). @default false */
  ignore?: boolean;
}

/** Registers the behaviour suite for a store; every test name starts with `name`. */
export function exerciseStore(name: string, open: OpenStore, options: ExerciseOptions): void {
  const test: Test = (title, fn) => {
    Deno.test({
      name: `${name}: ${title}`,
      ignore: options.ignore ?? false,
      fn: async () => {
        const { store, cleanup } = await open();
        try {
          await fn(store);
        } finally {
          await cleanup();
        }
      },
    });
  };

  const sharedTest: SharedTest = (title, fn) => {
    const lacking = !options.capabilities.shared;
    Deno.test({
      name: `${name}: ${lacking ? "[needs shared] " : ""}${title}`,
      ignore: (options.ignore ?? false) || lacking,
      fn: async () => {
        const { store, cleanup, peer } = await open();
        try {
          assert.ok(peer !== undefined, "a shared store must offer a peer");
          await fn(store, await peer());
        } finally {
          await cleanup();
        }
      },
    });
  };

  const cases: SuiteCases = { test, sharedTest, capabilities: options.capabilities };
  scheduleCases(cases);
  enqueueCases(cases);
  dedupCases(cases);
  claimCases(cases);
  claimOrderCases(cases);
  ackNackCases(cases);
  leaseWriteCases(cases);
  listingCases(cases);
  cancelRunNowCases(cases);
  settingsStatsCases(cases);
  deadLetterCases(cases);
  tickReleaseCases(cases);
  sweepCases(cases);
  groupCases(cases);
  fairShareCases(cases);
  limitCases(cases);
  commitCloseCases(cases);
  crossServerCases(cases);
  findJobsCases(cases);
  flowCases(cases);
}
