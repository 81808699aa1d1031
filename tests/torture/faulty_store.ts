/**
 * A store that breaks its guarantees on purpose, for the crash campaign's positive controls: a
 * checker that never fails proves nothing, so the campaign is also run against a queue known to
 * be broken and must find it out. It comes in through the server's store factory; nothing in
 * `lib/` knows it exists.
 *
 * - `ack-before-commit`: each write is answered as soon as it ran, and its transaction stays open
 *   (taking later writes too) for {@linkcode UNSAFE_COMMIT_DELAY_MS} before COMMIT, so a crash
 *   in that window loses writes that were already answered.
 * - `any-token`: an ack completes a leased job whatever token it presents, even after its lease
 *   ran out.
 * - `early-expiry`: leases end {@linkcode EARLY_EXPIRY_MS} before they run out, as on a server
 *   whose clock runs ahead of the one that stamped them, so a job is leased again while its
 *   holder's lease is still live: two live leases at once.
 *
 * On PostgreSQL (the `--db` is a `postgres://` URL) the real store is wrapped: `any-token` and
 * `early-expiry` the same way, and `ack-before-commit` answers each ack of a lease this process gave out at once
 * and writes it {@linkcode UNSAFE_COMMIT_DELAY_MS} later, so a crash in that window loses acks
 * that were already answered (the job comes back after its ack was confirmed).
 *
 * @module
 */

import { TegamiError } from "../../lib/core/errors.ts";
import type {
  CommitObserver,
  Committer,
  CommitterFactory,
  Transactor,
} from "../../lib/store/group_commit.ts";
import { openStore, type StoreFactory } from "../../lib/store/open_store.ts";
import { isPostgresUrl } from "../../lib/store/postgres/pg_url.ts";
import { SqliteStore } from "../../lib/store/sqlite/sqlite_store.ts";
import type { Store } from "../../lib/store/store.ts";
import type { Delivery } from "../../lib/core/job.ts";

/** The faults there are. */
export const FAULTS = ["ack-before-commit", "any-token", "early-expiry"] as const;

/** One of {@linkcode FAULTS}. */
export type Fault = typeof FAULTS[number];

/** How much earlier than they run out `early-expiry` ends leases, ms. */
export const EARLY_EXPIRY_MS = 200;

/** How long `ack-before-commit` keeps answered writes uncommitted, ms. */
export const UNSAFE_COMMIT_DELAY_MS = 500;

interface Pending {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** A committer that answers each write before COMMIT (see the module doc). */
export class AnswerBeforeCommit implements Committer {
  readonly #db: Transactor;
  readonly #observer: CommitObserver;
  readonly #delayMs: number;
  #queue: Pending[] = [];
  #scheduled = false;
  #idle: (() => void)[] = [];
  /** The transaction left open: how many operations it holds, since when, and its timer. */
  #open: { size: number; started: number; timer: ReturnType<typeof setTimeout> } | null = null;

  /** Wraps a database; COMMIT comes `delayMs` after the first answered write. */
  constructor(db: Transactor, observer: CommitObserver, delayMs: number) {
    this.#db = db;
    this.#observer = observer;
    this.#delayMs = delayMs;
  }

  /** Runs `operation` in the open transaction and answers at once, before COMMIT. */
  submit<T>(operation: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ run: operation, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setTimeout(() => this.flush(), 0);
      }
    });
  }

  /** Operations waiting for the next flush. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Resolves once nothing is waiting and the open transaction is committed. */
  drained(): Promise<void> {
    if (this.#queue.length === 0 && this.#open === null) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Runs and answers everything submitted so far; COMMIT comes later. */
  flush(): void {
    this.#scheduled = false;
    const batch = this.#queue;
    this.#queue = [];
    try {
      let open = this.#open;
      if (open === null) {
        this.#db.begin();
        const timer = setTimeout(() => this.#commit(), this.#delayMs);
        open = this.#open = { size: 0, started: performance.now(), timer };
      }
      for (const pending of batch) {
        this.#db.mark();
        try {
          const value = pending.run();
          this.#db.release();
          open.size++;
          pending.resolve(value); // before COMMIT: this is the fault
        } catch (error) {
          if (!(error instanceof TegamiError)) throw error;
          this.#db.undo();
          pending.reject(error);
        }
      }
    } catch (error) {
      if (this.#open !== null) clearTimeout(this.#open.timer);
      this.#open = null;
      this.#db.rollback();
      const failure = new TegamiError("unavailable", "Cannot commit the write", { cause: error });
      for (const pending of batch) pending.reject(failure); // no effect on those answered
      this.#notifyIdle();
    }
  }

  #commit(): void {
    const open = this.#open;
    if (open === null) return;
    this.#open = null;
    try {
      this.#db.commit();
      this.#observer(open.size, performance.now() - open.started, null);
    } catch (error) {
      this.#db.rollback();
      this.#observer(open.size, performance.now() - open.started, error);
    }
    this.#notifyIdle();
  }

  #notifyIdle(): void {
    if (this.#queue.length > 0 || this.#open !== null) return;
    const idle = this.#idle;
    this.#idle = [];
    for (const resolve of idle) resolve();
  }
}

/** The committer factory of `ack-before-commit`. */
export function answerBeforeCommit(delayMs = UNSAFE_COMMIT_DELAY_MS): CommitterFactory {
  return (db, observer) => new AnswerBeforeCommit(db, observer, delayMs);
}

/**
 * Wraps a store so that ack accepts any token: it remembers the lease each job was last given
 * (by this process) and acks with that one, at a moment the lease still held. Every other
 * method is the inner store's.
 */
export function acceptAnyToken(inner: Store): Store {
  const leases = new Map<number, { token: string; expires_at: number }>();
  const remember = (deliveries: Delivery[]) => {
    for (const d of deliveries) leases.set(d.job.id, { ...d.lease });
  };
  const wrapped: Partial<Store> = {
    claim: async (queue, max, leaseMs, now) => {
      const out = await inner.claim(queue, max, leaseMs, now);
      remember(out);
      return out;
    },
    claimFair: async (queue, wants, now) => {
      const out = await inner.claimFair(queue, wants, now);
      for (const list of out) remember(list);
      return out;
    },
    ack: (id, token, result, now) => {
      const lease = leases.get(id);
      if (lease === undefined || lease.token === token) return inner.ack(id, token, result, now);
      return inner.ack(id, lease.token, result, Math.min(now, lease.expires_at - 1));
    },
  };
  return new Proxy(inner, {
    get(target, property, receiver) {
      const own = wrapped[property as keyof Store];
      if (own !== undefined) return own;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * Wraps a store so that leases end `earlyMs` before they run out: maintenance (and the deadline
 * the broker's timer is armed for) runs that far ahead of the clock it is given. Every other
 * method is the inner store's.
 */
export function endLeasesEarly(inner: Store, earlyMs = EARLY_EXPIRY_MS): Store {
  const wrapped: Partial<Store> = {
    tick: (now, mine, limit) => inner.tick(now + earlyMs, mine, limit),
    nextDeadline: async (now) => {
      const at = await inner.nextDeadline(now + earlyMs);
      return at === null ? null : at - earlyMs;
    },
  };
  return new Proxy(inner, {
    get(target, property, receiver) {
      const own = wrapped[property as keyof Store];
      if (own !== undefined) return own;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * Wraps a store so that an ack of a lease this process gave out (with its token, while the
 * lease holds) is answered at once and written `delayMs` later: answered before committed.
 * Any other ack, and every other method, is the inner store's.
 */
export function answerAcksBeforeWriting(inner: Store, delayMs = UNSAFE_COMMIT_DELAY_MS): Store {
  const leases = new Map<number, { token: string; expires_at: number; queue: string }>();
  const remember = (deliveries: Delivery[]) => {
    for (const d of deliveries) leases.set(d.job.id, { ...d.lease, queue: d.job.queue });
  };
  const wrapped: Partial<Store> = {
    claim: async (queue, max, leaseMs, now) => {
      const out = await inner.claim(queue, max, leaseMs, now);
      remember(out);
      return out;
    },
    claimFair: async (queue, wants, now) => {
      const out = await inner.claimFair(queue, wants, now);
      for (const list of out) remember(list);
      return out;
    },
    ack: (id, token, result, now) => {
      const lease = leases.get(id);
      if (lease === undefined || lease.token !== token || now >= lease.expires_at) {
        return inner.ack(id, token, result, now);
      }
      leases.delete(id);
      setTimeout(() => {
        inner.ack(id, token, result, now).catch(() => {}); // the caller was answered long ago
      }, delayMs);
      // before the write: this is the fault
      return Promise.resolve({ id, queue: lease.queue, frees: false });
    },
  };
  return new Proxy(inner, {
    get(target, property, receiver) {
      const own = wrapped[property as keyof Store];
      if (own !== undefined) return own;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * A store factory with `fault` built in: the SQLite store with its committer replaced, or the
 * PostgreSQL store (for a `postgres://` URL) wrapped.
 */
export function faultyStoreFactory(fault: Fault): StoreFactory {
  return async (config, context) => {
    if (isPostgresUrl(config.db)) {
      const store = await openStore(config, context);
      if (fault === "early-expiry") return endLeasesEarly(store);
      return fault === "any-token" ? acceptAnyToken(store) : answerAcksBeforeWriting(store);
    }
    const store = SqliteStore.open({
      path: config.db,
      sync: config.sync,
      onCommit: context.onCommit,
      policy: context.policy,
      committer: fault === "ack-before-commit" ? answerBeforeCommit() : undefined,
    });
    if (fault === "early-expiry") return endLeasesEarly(store);
    return fault === "any-token" ? acceptAnyToken(store) : store;
  };
}
