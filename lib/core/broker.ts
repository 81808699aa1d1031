/**
 * The broker: policy above the store. It decides who gets which job (credit, round-robin),
 * wakes waiting consumers when jobs become available, and keeps the one timer that drives
 * delayed jobs and lease expiry (set for the earliest deadline; no per-job timers, no polling).
 *
 * Consumers — WebSocket subscriptions and HTTP long-polls — plug in as a
 * {@linkcode Subscriber}. Whoever holds a lease is told through {@linkcode LeaseHolder} when it
 * ends without their ack (cancel, expiry), and when it is settled by anyone, so credit is
 * counted in one place.
 *
 * @module
 */

import { checkDeadLetterQueue, isDefaultSettings, type QueueSettings } from "./queue_settings.ts";
import type { GroupSettings, GroupState } from "./group_settings.ts";
import { type Clock, EarliestTimer, type TimerHandle } from "./clock.ts";
import { IntakeGate } from "./intake_gate.ts";
import { BulkActions } from "./bulk_actions.ts";
import type { FoundJobs, JobFilter } from "./job_filter.ts";
import { MAINTENANCE_BATCH } from "./limits.ts";
import { shuttingDown, TegamiError } from "./errors.ts";
import type { Delivery, Enqueued, Job, NewJob } from "./job.ts";
import { type JobEvent, JobWatchers } from "./job_watch.ts";
import {
  checkFlowNodes,
  type Flow,
  type FlowCreated,
  flowNotFound,
  type FlowSummary,
  hasEnded,
  type NewFlow,
  type NewFlowNode,
} from "./flow.ts";
import type { DoneRetention, HandOvers, NackRequest } from "./lifecycle.ts";
import type {
  CancelResult,
  ClaimWant,
  EndedLease,
  FlowCancelled,
  JobPage,
  LeaseRef,
  NackResult,
  QueueCounts,
  Released,
  RunNowResult,
  ScheduleTick,
  Store,
  StoreEvent,
} from "../store/store.ts";

/** Why a lease ended, as told to its holder. */
export type LeaseNotice = "settled" | "cancelled" | "expired";

/** Someone holding leases (a WebSocket connection), told when one ends. */
export interface LeaseHolder {
  /** The lease `token` on job `id` is over; `why` says how. */
  leaseEnded(id: number, token: string, why: LeaseNotice): void;
}

/** A party that takes pushed jobs within its credit. */
export interface Subscriber {
  /** The queue it takes from. */
  readonly queue: string;
  /** Lease length for its jobs, or null for each job's own or the server's. */
  readonly leaseMs: number | null;
  /** How many more jobs it can take now (credit not yet used or reserved). */
  credit(): number;
  /** Marks `n` credit as reserved for a claim under way. */
  reserve(n: number): void;
  /**
   * Hands over claimed jobs and gives back the reservation of `reserved`. Answers how many of
   * them (the first ones) it took: the others are released at once, their attempt not counted
   * (the consumer is gone, or cannot take more now).
   */
  deliver(deliveries: Delivery[], reserved: number): number;
  /** Who holds the leases it is given (null: nobody to tell). */
  readonly holder: LeaseHolder | null;
  /** Most jobs it holds at once, for a standing subscription (absent for a one-off long-poll). */
  readonly prefetch?: number;
  /** How many more jobs it could hold now, those being claimed for it included. */
  room?(): number;
}

/** A claim on its way to its consumers (see the broker's `#claimStarted`). */
interface ClaimInFlight {
  /** Keeps it on its way until one more `done()`. */
  hold(): void;
  /** One reason to keep it is over. */
  done(): void;
}

/** How a lease ended, for metrics. */
export type LeaseOutcome = "acked" | "nacked" | "dead" | "expired" | "cancelled" | "released";

/** Sees what the broker does, for metrics. Every method must be cheap and must not throw. */
export interface BrokerObserver {
  /** Jobs were enqueued: `created` new, `deduplicated` answered with an existing id. */
  enqueued(queue: string, created: number, deduplicated: number): void;
  /** Jobs were leased; `waitedMs` is, per job, how long it had been available. */
  delivered(queue: string, waitedMs: number[]): void;
  /** A lease ended; `heldMs` is how long it was held, when known. */
  settled(queue: string, outcome: LeaseOutcome, heldMs: number | null): void;
  /** An enqueue to `queue` waited `ms` at the intake gate before it was stored. */
  intakeHeld(queue: string, ms: number): void;
}

/** Settings the broker needs. */
export interface BrokerOptions {
  /** The store. */
  store: Store;
  /** The clock. */
  clock: Clock;
  /** Finished jobs are kept this long, ms. */
  retainDoneMs: number;
  /** Reports failures of background work (timer ticks, sweeps). */
  onBackgroundError?: (what: string, error: unknown) => void;
  /** Sees deliveries and settlements, for metrics. */
  observer?: BrokerObserver;
  /** Most distinct queues: an enqueue that would add one more answers `conflict`. @default none */
  maxQueues?: number;
}

/** The job queue's policy and dispatch. */
export class Broker {
  readonly #store: Store;
  readonly #clock: Clock;
  /**
   * The server's retention of done jobs, and what an ack tells the store to decide whether it
   * deletes its job (see deletedAtAck).
   */
  readonly #doneRetention: DoneRetention;
  readonly #onError: (what: string, error: unknown) => void;
  readonly #subscribers = new Map<string, Subscriber[]>();
  readonly #rotation = new Map<string, number>();
  readonly #dispatching = new Set<string>();
  readonly #again = new Set<string>();
  readonly #longPolls = new Set<() => void>();
  /** Who waits for or watches which job (job_watch.ts). */
  readonly #watchers = new JobWatchers();
  readonly #observer: BrokerObserver | null;
  readonly #maxQueues: number;
  /** Holds enqueues while delivery lags behind intake. */
  readonly #gate: IntakeGate;
  /**
   * Every live lease handed out, by token: its job and queue, when it began (processing-time
   * metrics) and who holds it (told when it ends without their own settle).
   */
  readonly #live = new Map<
    string,
    { id: number; queue: string; at: number; holder: LeaseHolder | null }
  >();
  /** Claims on their way to their consumers, by the `now` they were dated: how many each. */
  readonly #claiming = new Map<number, number>();
  /** The next lease expiry or delayed job's due time: a tick then. */
  readonly #timer: EarliestTimer;
  /** Per queue whose rate holds consumers back, the timer for its next token. */
  readonly #heldTimers = new Map<string, TimerHandle>();
  #sweepTimer: TimerHandle | null = null;
  #closed = false;
  #unlisten: (() => void) | null = null;
  /** Bulk actions by filter (core/bulk_actions.ts), run over this broker's transitions. */
  readonly bulk: BulkActions;

  /** Makes a broker over a store; call {@linkcode Broker.start} to arm its timers. */
  constructor(options: BrokerOptions) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#doneRetention = {
      retainDoneMs: options.retainDoneMs,
      watched: (id) => this.#watchers.has(id),
    };
    this.#onError = options.onBackgroundError ?? (() => {});
    this.#observer = options.observer ?? null;
    this.#timer = new EarliestTimer(this.#clock, () => this.#timerTick());
    this.#maxQueues = options.maxQueues ?? Infinity;
    this.bulk = new BulkActions({ target: this, clock: this.#clock });
    this.#gate = new IntakeGate({
      ready: (queue) => this.#store.readyHint(queue) ?? this.#store.peers.backlogHint(queue),
      seen: (queue) => this.#store.peers.backlogSeen(queue),
      credit: (queue) => {
        let prefetch = 0;
        let room = 0;
        for (const subscriber of this.#subscribers.get(queue) ?? []) {
          prefetch += subscriber.prefetch ?? 0;
          room += subscriber.room?.() ?? 0;
        }
        return { prefetch, room, remote: this.#store.peers.remotePrefetch(queue) };
      },
    });
  }

  /** Recovers whatever the last stop left (due jobs, expired leases) and arms the timers. */
  async start(): Promise<void> {
    this.#unlisten = this.#store.peers.listen((event) => this.#heard(event));
    this.#store.onReleased((released) => this.#released(released));
    await this.#tick();
    this.#armSweep(0);
  }

  /** Stops timers, answers long-polls with nothing, and refuses further work. */
  close(): void {
    this.#closed = true;
    this.bulk.close();
    this.#unlisten?.();
    this.#unlisten = null;
    this.#timer.clear();
    if (this.#sweepTimer !== null) this.#clock.clearTimer(this.#sweepTimer);
    for (const timer of this.#heldTimers.values()) this.#clock.clearTimer(timer);
    this.#heldTimers.clear();
    for (const stop of [...this.#longPolls]) stop();
    this.#gate.openAll();
  }

  /** True once {@linkcode Broker.close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  // ---- producers ----

  /**
   * Stores jobs (all-or-nothing) and wakes consumers of the queue. With `tick`, the jobs are a
   * schedule's tick, recorded with them (see {@linkcode ScheduleTick}).
   */
  async enqueue(queue: string, jobs: NewJob[], tick?: ScheduleTick): Promise<Enqueued[]> {
    this.#refuseIfClosed();
    this.requireQueueRoom(queue);
    // Delivery before intake: while the server cannot deliver as fast as it is fed, the
    // enqueue waits a moment (see intake_gate.ts).
    const held = this.#gate.admit(queue, jobs.length);
    if (held !== null) {
      const since = performance.now();
      await held;
      this.#observer?.intakeHeld(queue, performance.now() - since);
      this.#refuseIfClosed();
    }
    const now = this.#clock.now();
    const stored = this.#store.enqueue(queue, jobs, now, tick);
    // Offer the queue at once: the claim joins the same group commit right after the insert,
    // so a waiting consumer gets the job with one commit and one fsync, not two.
    if (jobs.some((job) => job.run_at <= now)) this.wake(queue, true);
    const out = await stored;
    let pending = false;
    let earliest = Infinity;
    let deduplicated = 0;
    for (let i = 0; i < out.length; i++) {
      const e = out[i];
      if (e.deduplicated) deduplicated++;
      // An ignored duplicate changed nothing; a new, replaced or extended job may now be ready,
      // or due at another time.
      if (e.duplicate === "ignored") continue;
      if (e.state === "pending") pending = true;
      else if (e.state === "delayed" && e.run_at < earliest) earliest = e.run_at;
    }
    this.#observer?.enqueued(queue, out.length - deduplicated, deduplicated);
    if (pending) this.wake(queue);
    if (earliest !== Infinity) this.#armAt(earliest);
    return out;
  }

  /** Reads a job, or null. */
  get(id: number): Promise<Job | null> {
    return this.#store.get(id);
  }

  /** The queue of a job, or null if there is no such job. */
  queueOf(id: number): Promise<string | null> {
    return this.#store.queueOf(id);
  }

  /** Cancels a waiting or leased job (telling its holder), or removes a finished one. */
  async cancel(id: number): Promise<CancelResult> {
    const result = await this.#store.cancel(id, this.#clock.now());
    if (!result.removed) this.#ended(id);
    if (result.revoked_token !== null) {
      this.#over(result.revoked_token, result.queue, "cancelled", "cancelled");
      // The lease held a slot (of its group, of the queue's concurrency) that is free now.
      this.wake(result.queue);
    } else if (!result.removed) this.#observer?.settled(result.queue, "cancelled", null);
    return result;
  }

  // ---- flows ----

  /**
   * Creates a flow (core/flow.ts) all-or-nothing, after checking its graph; wakes the queues
   * of the nodes that start pending.
   */
  async createFlow(flow: NewFlow): Promise<FlowCreated> {
    this.#refuseIfClosed();
    const order = checkFlowNodes(flow.nodes);
    for (const node of flow.nodes) this.requireQueueRoom(node.queue);
    const created = await this.#store.createFlow(flow, order, this.#clock.now());
    if (!created.deduplicated) this.#started(created);
    return created;
  }

  /** Adds nodes to the flow of the leased job `id` (its lease `token`); see `Store`. */
  async addFlowNodes(id: number, token: string, nodes: NewFlowNode[]): Promise<FlowCreated> {
    this.#refuseIfClosed();
    for (const node of nodes) this.requireQueueRoom(node.queue);
    const created = await this.#store.addFlowNodes(id, token, nodes, this.#clock.now());
    this.#started(created);
    return created;
  }

  /** Reads a flow with its nodes, or null. */
  getFlow(id: number): Promise<Flow | null> {
    return this.#store.getFlow(id);
  }

  /** Flows by id after `after`, at most `limit`. */
  listFlows(after: number, limit: number, newest = false): Promise<FlowSummary[]> {
    return this.#store.listFlows(after, limit, newest);
  }

  /** Cancels every node of a flow that has not ended, telling the holders of its leases. */
  async cancelFlow(id: number): Promise<FlowCancelled> {
    const out = await this.#store.cancelFlow(id, this.#clock.now());
    if (out === null) throw flowNotFound(id);
    for (const cancelled of out.ids) this.#ended(cancelled);
    for (const [, token, queue] of out.revoked) {
      this.#over(token, queue, "cancelled", "cancelled");
      this.wake(queue);
    }
    return out;
  }

  /** Wakes the queues of new nodes that are pending, and arms the timer for delayed ones. */
  #started(created: FlowCreated): void {
    let earliest = Infinity;
    const ready = new Set<string>();
    for (const node of created.nodes) {
      if (node.state === "pending") ready.add(node.queue);
      else if (node.state === "delayed" && node.run_at < earliest) earliest = node.run_at;
    }
    for (const queue of ready) this.wake(queue);
    if (earliest !== Infinity) this.#armAt(earliest);
  }

  /** What a commit did to flows beyond what its caller asked. */
  #released(released: Released): void {
    if (this.#closed) return;
    for (const queue of released.ready) this.wake(queue);
    if (released.due !== null) this.#armAt(released.due);
    for (const id of released.ended) this.#ended(id);
  }

  // ---- watching jobs ----

  /**
   * Calls `listener` with job `id`'s progress reports and its end (done, dead or cancelled) as
   * this server makes or hears of them; answers a function that stops it.
   */
  watchJob(id: number, listener: (event: JobEvent) => void): () => void {
    return this.#watch(id, listener);
  }

  /**
   * The job once it has ended (done, dead or cancelled), waiting up to `waitMs` for that; after
   * the wait (or on shutdown, or when `signal` aborts) the job as it is then; null when there is
   * no such job.
   */
  waitForEnd(id: number, waitMs: number, signal?: AbortSignal): Promise<Job | null> {
    this.#refuseIfClosed();
    return new Promise<Job | null>((resolve, reject) => {
      let done = false;
      /** Ends the wait once, whichever way: the job, or the store's error. */
      const settle = (answer: () => void) => {
        if (done) return;
        done = true;
        this.#clock.clearTimer(timer);
        signal?.removeEventListener("abort", stop);
        this.#longPolls.delete(stop);
        unwatch();
        answer();
      };
      const read = (ended: (job: Job | null) => boolean) =>
        this.#store.get(id).then(
          (job) => {
            if (ended(job)) settle(() => resolve(job));
          },
          (error) => settle(() => reject(error)),
        );
      // Watching first, then reading: an end between the two is heard, one before is read.
      const unwatch = this.#watch(id, (event) => {
        if (event.kind === "ended") settle(() => resolve(event.job));
        else if (event.kind === "gone") settle(() => resolve(null));
      });
      // When the wait runs out (or is given up): the job as it is then.
      const stop = () => {
        if (!done) read(() => true);
      };
      const timer = this.#clock.setTimer(stop, Math.max(0, waitMs));
      signal?.addEventListener("abort", stop, { once: true });
      this.#longPolls.add(stop);
      read((job) => job === null || hasEnded(job.state) || waitMs <= 0);
    });
  }

  /**
   * Job `id` may have ended: if anyone watches it, read it and tell them how, or that it is gone
   * (deleted by an ack the watch began too late to keep it from).
   */
  #ended(id: number): void {
    if (!this.#watchers.has(id)) return;
    this.#store.get(id).then((job) => {
      if (job === null) this.#watchers.tell(id, { kind: "gone", id });
      else if (hasEnded(job.state)) this.#watchers.tell(id, { kind: "ended", job });
    }, (error) => this.#onError("read a watched job", error));
  }

  /** After a sweep deleted jobs: the watchers of any that are gone hear so (one read). */
  async #sweptWatched(): Promise<void> {
    const watched = this.#watchers.ids();
    if (watched.length === 0) return;
    const stored = await this.#store.storedIds(watched);
    for (const id of watched) {
      if (!stored.has(id)) this.#watchers.tell(id, { kind: "gone", id });
    }
  }

  /** Another server stored progress of a watched job (null: too large to send, read it). */
  #heardProgress(id: number, at: number, progress: string | null): void {
    if (!this.#watchers.has(id)) return;
    if (progress !== null) {
      this.#watchers.tell(id, { kind: "progress", id, progress, at });
      return;
    }
    this.#store.get(id).then((job) => {
      if (job?.progress != null) {
        this.#watchers.tell(id, {
          kind: "progress",
          id,
          progress: job.progress,
          at: job.progress_at ?? at,
        });
      }
    }, (error) => this.#onError("read a watched job", error));
  }

  /** Watches job `id` here and, through the store's peers, on the other servers. */
  #watch(id: number, listener: (event: JobEvent) => void): () => void {
    const stop = this.#watchers.watch(id, listener);
    this.#store.peers.watch(id);
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      stop();
      this.#store.peers.unwatch(id);
    };
  }

  // ---- consumers ----

  /**
   * Leases up to `max` jobs, waiting up to `waitMs` for the first if none is ready. Answers an
   * empty list after the wait, on shutdown, or when `signal` aborts.
   */
  async lease(
    queue: string,
    max: number,
    waitMs: number,
    leaseMs: number | null,
    signal?: AbortSignal,
  ): Promise<Delivery[]> {
    this.#refuseIfClosed();
    const now = this.#clock.now();
    const claim = this.#claimStarted(now);
    let jobs: Delivery[];
    try {
      jobs = this.#withoutEnded(await this.#store.claim(queue, max, leaseMs, now), claim);
    } finally {
      claim.done();
    }
    if (jobs.length > 0) {
      this.#armForLeases(jobs);
      this.#began(queue, jobs, now, null);
    }
    if (jobs.length > 0 || waitMs <= 0 || this.#closed || signal?.aborted) return jobs;
    return await new Promise<Delivery[]>((resolve) => {
      let reserved = 0;
      let done = false;
      const finish = (deliveries: Delivery[]) => {
        if (done) return;
        done = true;
        this.#clock.clearTimer(timer);
        signal?.removeEventListener("abort", stop);
        this.#longPolls.delete(stop);
        this.unsubscribe(waiter);
        resolve(deliveries);
      };
      const stop = () => finish([]);
      const waiter: Subscriber = {
        queue,
        leaseMs,
        holder: null,
        credit: () => done ? 0 : max - reserved,
        reserve: (n) => {
          reserved += n;
        },
        deliver: (deliveries, n) => {
          reserved -= n;
          if (done) return 0;
          if (deliveries.length > 0) finish(deliveries);
          return deliveries.length;
        },
      };
      const timer = this.#clock.setTimer(stop, waitMs);
      signal?.addEventListener("abort", stop, { once: true });
      this.#longPolls.add(stop);
      this.subscribe(waiter);
    });
  }

  /** Adds a consumer to its queue's rotation and offers it jobs at once. */
  subscribe(subscriber: Subscriber): void {
    const list = this.#subscribers.get(subscriber.queue);
    if (list === undefined) this.#subscribers.set(subscriber.queue, [subscriber]);
    else list.push(subscriber);
    this.#countConsumers(subscriber.queue);
    this.wake(subscriber.queue);
  }

  /** Removes a consumer from its queue's rotation. */
  unsubscribe(subscriber: Subscriber): void {
    const list = this.#subscribers.get(subscriber.queue);
    if (list === undefined) return;
    const at = list.indexOf(subscriber);
    if (at >= 0) list.splice(at, 1);
    this.#countConsumers(subscriber.queue);
    if (list.length === 0) {
      this.#subscribers.delete(subscriber.queue);
      this.#rotation.delete(subscriber.queue);
    }
    this.#gate.recheck(subscriber.queue);
  }

  /** Tells the store how many consumers this server has on `queue`, and their summed prefetch. */
  #countConsumers(queue: string): void {
    const list = this.#subscribers.get(queue) ?? [];
    let prefetch = 0;
    for (const subscriber of list) prefetch += subscriber.prefetch ?? 0;
    this.#store.peers.setConsumers(queue, list.length, prefetch);
  }

  /**
   * How many consumers (subscriptions and waiting long-polls) a queue has, on every server
   * sharing the store.
   */
  consumerCount(queue: string): number {
    return this.#store.peers.consumers(queue);
  }

  /** Completes a leased job. */
  async ack(id: number, token: string, result: string | null): Promise<{ id: number }> {
    const out = await this.#store.ack(id, token, result, this.#clock.now(), this.#doneRetention);
    this.#ended(id);
    // A lease this server did not hand out is held, if at all, through another one.
    if (!this.#live.has(token)) this.#store.peers.announce(id, token, "settled");
    this.#over(token, out.queue, "acked", "settled");
    if (out.frees) this.wake(out.queue);
    return { id: out.id };
  }

  /** Fails a leased job: retry later (backoff or `delay_ms`) or dead. */
  async nack(id: number, token: string, request: NackRequest): Promise<NackResult> {
    const out = await this.#store.nack(id, token, request, this.#clock.now());
    if (out.state === "dead" || out.moved_to !== undefined) this.#ended(id);
    if (!this.#live.has(token)) this.#store.peers.announce(id, token, "settled");
    this.#over(
      token,
      out.queue,
      out.state === "dead" || out.moved_to !== undefined ? "dead" : "nacked",
      "settled",
    );
    // Whatever became of the job, its lease's slot (of a group, of a limit) is free: offer the
    // queue again (cheap when nothing is pending).
    this.wake(out.queue);
    if (out.moved_to !== undefined) this.wake(out.moved_to);
    if (out.state === "delayed") this.#armAt(out.run_at);
    return out;
  }

  /** Extends a lease. */
  async extend(
    id: number,
    token: string,
    leaseMs: number | null,
  ): Promise<{ id: number; expires_at: number }> {
    const out = await this.#store.extend(id, token, leaseMs, this.#clock.now());
    // A shorter lease may now end before the armed deadline.
    this.#armAt(out.expires_at);
    return out;
  }

  /** Records a checkpoint (JSON text) on a leased job. */
  checkpoint(id: number, token: string, data: string): Promise<{ id: number }> {
    return this.#store.checkpoint(id, token, data, this.#clock.now());
  }

  /** Records a progress report (JSON text) on a leased job. */
  async progress(id: number, token: string, progress: string): Promise<{ id: number }> {
    const at = this.#clock.now();
    const out = await this.#store.progress(id, token, progress, at);
    this.#watchers.tell(id, { kind: "progress", id, progress, at });
    return out;
  }

  /** Gives back leases whose holder went away: pending at once (or dead), then redelivered. */
  async release(leases: LeaseRef[]): Promise<EndedLease[]> {
    if (leases.length === 0) return [];
    const ended = await this.#store.release(leases, this.#clock.now());
    for (const lease of ended) {
      // The holder is the one giving the lease back (or is gone): nobody to tell.
      const dead = lease.state === "dead" || lease.moved_to !== undefined;
      this.#over(lease.token, lease.queue, dead ? "dead" : "released", null);
      this.wake(lease.queue);
      if (lease.moved_to !== undefined) this.wake(lease.moved_to);
    }
    return ended;
  }

  // ---- admin ----

  /** Pauses or resumes delivery from a queue. */
  async setPaused(queue: string, paused: boolean): Promise<void> {
    if (paused) this.requireQueueRoom(queue);
    await this.#store.setPaused(queue, paused);
    if (!paused) this.wake(queue);
  }

  /** A queue's settings (the defaults for a queue without any). */
  settings(queue: string): Promise<QueueSettings> {
    return this.#store.settings(queue);
  }

  /**
   * Replaces a queue's settings and offers the queue again (a limit may have been raised).
   * Configuring a new queue counts against `--max-queues` like its first job.
   */
  async putSettings(queue: string, settings: QueueSettings): Promise<QueueSettings> {
    this.#refuseIfClosed();
    checkDeadLetterQueue(queue, settings);
    if (!isDefaultSettings(settings)) this.requireQueueRoom(queue);
    const stored = await this.#store.putSettings(queue, settings, this.#clock.now());
    this.wake(queue);
    return stored;
  }

  /** One ordering group of a queue: its settings, its jobs and what holds it back now. */
  group(queue: string, group: string): Promise<GroupState> {
    return this.#store.getGroup(queue, group, this.#clock.now());
  }

  /**
   * A queue's groups that have settings of their own or jobs pending or leased, by name after
   * `after` (null: from the first), at most `limit`.
   */
  listGroups(queue: string, after: string | null, limit: number): Promise<GroupState[]> {
    return this.#store.listGroups(queue, after, limit, this.#clock.now());
  }

  /**
   * Replaces a group's settings (null or the defaults: removes them) and offers the queue again
   * (a limit may have been raised, a weight changed).
   */
  async putGroupSettings(
    queue: string,
    group: string,
    settings: GroupSettings | null,
  ): Promise<GroupState> {
    this.#refuseIfClosed();
    const state = await this.#store.putGroupSettings(queue, group, settings, this.#clock.now());
    this.wake(queue);
    return state;
  }

  /** Store counts for one queue or all. */
  stats(queue?: string): Promise<QueueCounts[]> {
    return this.#store.stats(queue, this.#clock.now());
  }

  /** Dead jobs of a queue, by id after a cursor (the dead-letter listing). */
  listDead(queue: string, limit: number, after: number): Promise<Job[]> {
    return this.#store.listJobs(queue, { state: "dead", order: "oldest", after, limit });
  }

  /** A page of a queue's jobs in one state (the job browser). */
  listJobs(queue: string, page: JobPage): Promise<Job[]> {
    return this.#store.listJobs(queue, page);
  }

  /** Makes a delayed job pending now and wakes its queue's consumers. */
  async runNow(id: number): Promise<RunNowResult> {
    const out = await this.#store.runNow(id, this.#clock.now());
    this.wake(out.queue);
    return out;
  }

  /**
   * Moves up to `limit` of `from`'s waiting jobs to `to`, or back to the queues they were
   * dead-lettered from when `to` is null (`Store.moveWaiting`), and wakes their consumers.
   * Answers how many moved.
   */
  async moveWaiting(from: string, to: string | null, limit: number): Promise<number> {
    if (to !== null) this.requireQueueRoom(to);
    const queues = await this.#store.moveWaiting(from, to, limit, this.#clock.now());
    for (const queue of new Set(queues)) this.wake(queue);
    return queues.length;
  }

  /**
   * Makes dead jobs pending again (those of `ids`, or all of the queue's) and wakes consumers.
   * In transactions of at most `MAINTENANCE_BATCH` jobs, resting between them as long as each
   * took, so a million dead letters never stall other requests; a crash midway leaves some
   * requeued and the rest dead.
   */
  async requeueDead(queue: string, ids: number[] | null): Promise<number> {
    let total = 0;
    let after = 0;
    for (let at = 0;;) {
      const began = performance.now();
      const which = ids === null ? { after } : { ids: ids.slice(at, at + MAINTENANCE_BATCH) };
      const { requeued, last } = await this.#store.requeueDead(
        queue,
        which,
        this.#clock.now(),
        MAINTENANCE_BATCH,
      );
      total += requeued;
      if (requeued > 0) this.wake(queue);
      at += MAINTENANCE_BATCH;
      if (ids === null ? requeued < MAINTENANCE_BATCH : at >= ids.length) return total;
      after = last ?? after;
      await restAfter(performance.now() - began);
    }
  }

  /** One window of a queue's jobs that `filter` takes (see `Store.findJobs`); changes nothing. */
  findJobs(filter: JobFilter, after: number, limit: number): Promise<FoundJobs> {
    return this.#store.findJobs(filter, after, limit);
  }

  /** Proves the database takes a write (readiness). */
  probeWritable(): Promise<void> {
    return this.#store.probeWritable();
  }

  // ---- dispatch ----

  /**
   * Offers a queue's ready jobs to its consumers with credit (coalesces concurrent calls).
   * `eager` is for a wake sent before the commit that makes the jobs ready.
   */
  wake(queue: string, eager = false): void {
    if (this.#closed || !this.#subscribers.has(queue)) return;
    // The store's committed counts say nothing is ready: skip the empty claim (every commit
    // that makes a job ready wakes the queue again afterwards). An eager wake runs before its
    // enqueue commits, so it cannot trust the counts yet.
    if (!eager && this.#store.readyHint(queue) === 0) return;
    if (this.#dispatching.has(queue)) {
      this.#again.add(queue);
      return;
    }
    this.#dispatching.add(queue);
    this.#dispatch(queue).catch((error) => this.#onError("dispatch", error)).finally(() => {
      this.#dispatching.delete(queue);
      // A wake() that came after the last check of #again would otherwise be lost.
      if (this.#again.has(queue)) this.wake(queue);
    });
  }

  async #dispatch(queue: string): Promise<void> {
    do {
      this.#again.delete(queue);
      const list = this.#subscribers.get(queue);
      if (list === undefined || this.#closed) return;
      // Round-robin: a pass starts after the consumer that was dealt the first job of the last
      // pass that dealt any, so jobs arriving one at a time go to each consumer in turn.
      const start = (this.#rotation.get(queue) ?? 0) % list.length;
      const now = this.#clock.now();
      const takers: Subscriber[] = [];
      const wants: ClaimWant[] = [];
      for (let i = 0; i < list.length; i++) {
        const subscriber = list[(start + i) % list.length];
        const n = subscriber.credit();
        if (n <= 0) continue;
        subscriber.reserve(n);
        takers.push(subscriber);
        wants.push({ max: n, lease_ms: subscriber.leaseMs });
      }
      if (takers.length === 0) return;
      const claim = this.#claimStarted(now);
      let lists: Delivery[][];
      try {
        lists = await this.#store.claimFair(queue, wants, now);
      } catch (error) {
        claim.done();
        for (let i = 0; i < takers.length; i++) takers[i].deliver([], wants[i].max);
        throw error;
      }
      let full = false;
      const first = lists.findIndex((l) => l.length > 0);
      if (first >= 0) {
        const at = list.indexOf(takers[first]);
        if (at >= 0) this.#rotation.set(queue, at + 1);
      }
      try {
        for (let i = 0; i < takers.length; i++) {
          if (this.#handOver(takers[i], lists[i], wants[i].max, claim)) full = true;
        }
      } finally {
        claim.done();
      }
      // A consumer that got all it asked for may have left jobs behind: go round again.
      if (full) this.#again.add(queue);
      let delivered = 0;
      for (const dealt of lists) delivered += dealt.length;
      let asked = 0;
      for (const want of wants) asked += want.max;
      this.#gate.recheck(queue, { delivered, asked });
      // Credit left unused because the queue's rate held the claim back: offer the queue again
      // when the next token comes (one timer per queue, never a spin).
      if (delivered < asked) this.#armHeld(queue);
    } while (this.#again.has(queue));
  }

  #handOver(
    subscriber: Subscriber,
    claimed: Delivery[],
    reserved: number,
    claim: ClaimInFlight,
  ): boolean {
    const deliveries = this.#withoutEnded(claimed, claim);
    if (deliveries.length > 0) {
      this.#armForLeases(deliveries);
      this.#began(subscriber.queue, deliveries, this.#clock.now(), subscriber.holder);
    }
    const taken = subscriber.deliver(deliveries, reserved);
    if (taken < deliveries.length) {
      // The consumer vanished between claim and hand-over, or its socket is full: give the jobs
      // it did not take back at once. They never reached anyone: until they are back, they are
      // the claim's, not handed-over leases a tick would end as expired.
      const untaken = deliveries.slice(taken);
      for (const d of untaken) this.#live.delete(d.lease.token);
      this.#giveBack(untaken, claim);
      return false;
    }
    return claimed.length === reserved;
  }

  /**
   * The deliveries whose lease is still running. A claim's leases are dated when the claim is
   * asked for, and a server that stalls (starved of CPU, stopped, or waiting for its database)
   * can get its answer after a lease's whole length: pushing such a lease hands a consumer a job
   * it can no longer ack, and would count an attempt nobody could use. Those go back at once as
   * undelivered (the attempt not counted); no tick of this server ends them meanwhile, since
   * the claim that carries them is still on its way until they are back (`leaseEndDue`).
   */
  #withoutEnded(deliveries: Delivery[], claim: ClaimInFlight): Delivery[] {
    const now = this.#clock.now();
    let ended = 0;
    for (const d of deliveries) if (d.lease.expires_at <= now) ended++;
    if (ended === 0) return deliveries;
    this.#giveBack(deliveries.filter((d) => d.lease.expires_at <= now), claim);
    return deliveries.filter((d) => d.lease.expires_at > now);
  }

  /** Releases deliveries nobody received; the claim stays on its way until they are back. */
  #giveBack(deliveries: Delivery[], claim: ClaimInFlight): void {
    claim.hold();
    this.release(
      deliveries.map((d) => ({ id: d.job.id, token: d.lease.token, undelivered: true })),
    ).catch((error) => this.#onError("release", error)).finally(() => claim.done());
  }

  /**
   * Marks a claim dated `now` as on its way to its consumers until its `done()` has been called
   * once for it and once for each `hold()`: a tick leaves the leases it may carry alone.
   */
  #claimStarted(now: number): ClaimInFlight {
    const claiming = this.#claiming;
    claiming.set(now, (claiming.get(now) ?? 0) + 1);
    let holds = 1;
    return {
      hold: () => {
        holds++;
      },
      done: () => {
        if (holds === 0) return;
        holds--;
        if (holds > 0) return;
        const n = claiming.get(now)! - 1;
        if (n === 0) claiming.delete(now);
        else claiming.set(now, n);
      },
    };
  }

  /** What this server knows of its claims, as the store's tick reads it (at the tick's now). */
  #handOvers(): HandOvers {
    let since: number | null = null;
    for (const at of this.#claiming.keys()) if (since === null || at < since) since = at;
    return { handedOver: this.#isHandedOver, claimingSince: since };
  }

  readonly #isHandedOver = (token: string): boolean => this.#live.has(token);

  #began(
    queue: string,
    deliveries: Delivery[],
    now: number,
    holder: LeaseHolder | null,
  ): void {
    const waited = this.#observer === null ? null : new Array<number>(deliveries.length);
    for (let i = 0; i < deliveries.length; i++) {
      const d = deliveries[i];
      this.#live.set(d.lease.token, { id: d.job.id, queue, at: now, holder });
      if (waited !== null) waited[i] = Math.max(0, now - d.job.run_at);
    }
    if (waited !== null) this.#observer!.delivered(queue, waited);
  }

  /** A lease ended: count it, and tell its holder `tell` (null: the holder already knows). */
  #over(token: string, queue: string, outcome: LeaseOutcome, tell: LeaseNotice | null): void {
    const live = this.#live.get(token);
    this.#live.delete(token);
    // A repeated ack finds no live lease: it was counted the first time.
    if (this.#observer !== null && (live !== undefined || outcome !== "acked")) {
      this.#observer.settled(
        queue,
        outcome,
        live === undefined ? null : this.#clock.now() - live.at,
      );
    }
    if (tell !== null && live?.holder) live.holder.leaseEnded(live.id, token, tell);
  }

  /** News from other servers sharing the store. */
  #heard(event: StoreEvent): void {
    if (this.#closed) return;
    switch (event.kind) {
      case "ready":
        this.wake(event.queue);
        return;
      case "lease_ended": {
        // Counted by the server that ended it; here only its holder, if this server has it,
        // is told.
        const live = this.#live.get(event.token);
        if (live === undefined) return;
        this.#live.delete(event.token);
        live.holder?.leaseEnded(live.id, event.token, event.why);
        return;
      }
      case "backlog":
        // Other servers deliver this queue: their deliveries let held enqueues go as a claim
        // here would; a stalled delivery holds nothing back.
        this.#gate.recheck(
          event.queue,
          event.stalled
            ? { delivered: 0, asked: 1 }
            : { delivered: event.delivered, asked: event.delivered },
        );
        return;
      case "consumers":
        // The bound the gate holds this queue's backlog to moved (no subscribers left: nothing
        // is held).
        this.#gate.recheck(event.queue);
        return;
      case "ended":
        this.#ended(event.id);
        return;
      case "progress":
        this.#heardProgress(event.id, event.at, event.progress);
        return;
      case "resync":
        this.#tick().catch((error) => this.#onError("tick", error));
        for (const queue of this.#subscribers.keys()) this.wake(queue);
        return;
    }
  }

  /** Forgets holders' leases without telling them (the holder is gone). */
  forgetHolder(tokens: Iterable<string>): void {
    for (const token of tokens) {
      const live = this.#live.get(token);
      if (live !== undefined) live.holder = null;
    }
  }

  // ---- time ----

  /** Arms the queue's wake for its next rate token, if its last claim was held back by it. */
  #armHeld(queue: string): void {
    const at = this.#store.claimHeldUntil(queue);
    if (at === null || this.#closed || this.#heldTimers.has(queue)) return;
    const timer = this.#clock.setTimer(() => {
      this.#heldTimers.delete(queue);
      this.wake(queue);
    }, Math.max(0, at - this.#clock.now()));
    this.#heldTimers.set(queue, timer);
  }

  /** Arms the timer for the earliest expiry among new leases (their lengths may differ). */
  #armForLeases(deliveries: Delivery[]): void {
    let earliest = Infinity;
    for (const d of deliveries) if (d.lease.expires_at < earliest) earliest = d.lease.expires_at;
    this.#armAt(earliest);
  }

  #armAt(at: number): void {
    if (!this.#closed) this.#timer.armAt(at);
  }

  /** The timer's tick: promotes and expires what is due, and arms the next. */
  #timerTick(): void {
    this.#tick().catch((error) => {
      this.#onError("tick", error);
      // Try again shortly: a failed tick (disk full) must not stop expiry for good.
      this.#armAt(this.#clock.now() + 1000);
    });
  }

  async #tick(): Promise<void> {
    // Chunk by chunk: each is one short transaction; between them the woken queues deliver and
    // the event loop answers others, so a million jobs coming due never stall the server.
    for (;;) {
      if (this.#closed) return;
      const began = performance.now();
      const result = await this.#store.tick(this.#clock.now(), this.#handOvers());
      for (const lease of result.expired) {
        if (lease.state === "dead" || lease.moved_to !== undefined) this.#ended(lease.id);
        this.#over(
          lease.token,
          lease.queue,
          lease.state === "dead" || lease.moved_to !== undefined ? "dead" : "expired",
          "expired",
        );
      }
      for (const queue of result.woken) this.wake(queue);
      if (!result.more) break;
      // Rest as long as the chunk took: the rest of the server gets at least half the time,
      // however many turns of the event loop its requests need.
      await restAfter(performance.now() - began);
    }
    const next = await this.#store.nextDeadline(this.#clock.now());
    if (next !== null) this.#armAt(next);
  }

  #armSweep(wait: number): void {
    if (this.#closed) return;
    this.#sweepTimer = this.#clock.setTimer(async () => {
      try {
        const swept = await this.#store.sweepFinished(
          this.#clock.now(),
          this.#doneRetention.retainDoneMs,
        );
        if (swept > 0) await this.#sweptWatched();
      } catch (error) {
        this.#onError("sweep", error);
      }
      this.#armSweep(Math.min(Math.max(this.#doneRetention.retainDoneMs / 4, 1000), 60_000));
    }, wait);
  }

  /**
   * Refuses (`conflict`) what would create `queue` when it is new and `--max-queues` queues are
   * known already: an enqueue, settings, a pause, a schedule. Every queue costs memory and scrape
   * time, so their number is bounded. Concurrent first enqueues to new queues may pass the limit
   * by as many as are in flight together.
   */
  requireQueueRoom(queue: string): void {
    if (this.#maxQueues === Infinity) return;
    const known = this.#store.knownQueues();
    if (known.has(queue)) return;
    if (known.size < this.#maxQueues) return;
    throw new TegamiError(
      "conflict",
      `Cannot create queue "${queue}": ${this.#maxQueues} queues is the limit (--max-queues); ` +
        "queues are forgotten once empty",
    );
  }

  #refuseIfClosed(): void {
    if (this.#closed) throw shuttingDown();
  }
}

/**
 * Lets timers, I/O and other requests run before the next chunk of maintenance. A real timer,
 * not the injected clock: this shares the CPU, it is not a deadline.
 */
function restAfter(busyMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(50, Math.max(1, busyMs))));
}
