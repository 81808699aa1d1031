/**
 * The storage seam. Every method is one atomic state transition; SQL lives only in the
 * adapters behind it (SQLite, PostgreSQL). Policy lives above it: who gets which job
 * in the broker, and what each transition does (lease lengths, retries, dead jobs, dealing a
 * claim) in the pure rules of `core/lifecycle.ts`, which every adapter applies inside its
 * transaction with the `LifecyclePolicy` it was built with.
 *
 * Every method that changes state resolves only after the change is committed; a failed commit
 * rejects with `unavailable`.
 *
 * A store may be shared by several servers (PostgreSQL). What the servers tell each other is not
 * storage and has its own interface, {@linkcode Peers}, which every store hands out as `peers`:
 * news of jobs that became ready and leases that ended elsewhere, consumer counts, and the
 * estimates of a backlog other servers feed. A store used by one server alone (SQLite) hands out
 * {@linkcode LocalPeers}, which hears nothing and tells nobody: the broker already knows all
 * that happens. The broker never asks which kind of store it has.
 *
 * @module
 */

import type { Flow, FlowCreated, FlowSummary, NewFlow, NewFlowNode } from "../core/flow.ts";
import type { Delivery, Enqueued, Job, JobState, NewJob } from "../core/job.ts";
import type { FoundJobs, JobFilter } from "../core/job_filter.ts";
import type { DoneRetention, HandOvers, NackRequest } from "../core/lifecycle.ts";
import type { QueueSettings } from "../core/queue_settings.ts";
import type { GroupSettings, GroupState } from "../core/group_settings.ts";
import type { Schedule, ScheduleDefinition } from "../core/schedule.ts";

/** One consumer's share of a {@linkcode Store.claimFair}. */
export interface ClaimWant {
  /** Most jobs it takes. */
  max: number;
  /** Its lease length, or null for each job's own or the server's. */
  lease_ms: number | null;
}

/** Counts of a queue's jobs by state. */
export type StateCounts = Record<JobState, number>;

/** A queue's ordering groups, counted. */
export interface GroupCounts {
  /** Groups with jobs pending. */
  waiting: number;
  /** Groups with jobs leased. */
  leased: number;
  /**
   * Groups with jobs pending that have as many leased as they may (their own `concurrency`, else
   * the queue's `group_limit`): waiting for a slot.
   */
  full: number;
  /** Groups with jobs pending that their own rate holds back: waiting for a token. */
  rate_held: number;
  /** The held groups (full or rate held) with the most jobs pending, at most 5, most first. */
  top_held: HeldGroup[];
}

/** A group whose pending jobs wait because of its own limits (see {@linkcode GroupCounts}). */
export interface HeldGroup {
  /** The group's name. */
  group: string;
  /** Why: no free slot, or no rate token. */
  held: "concurrency" | "rate";
  /** Its jobs pending. */
  pending: number;
  /** Its jobs leased. */
  leased: number;
  /** Most of its jobs leased at once. */
  limit: number;
}

/** A queue's numbers as the store knows them. */
export interface QueueCounts {
  /** The queue's name. */
  name: string;
  /** Whether delivery is paused. */
  paused: boolean;
  /** Jobs by state. */
  counts: StateCounts;
  /** When the oldest pending job became available, or null if none is pending. */
  oldest_pending_at: number | null;
  /** The queue's settings (the defaults when it has none); shared, never to be modified. */
  settings: Readonly<QueueSettings>;
  /** Its ordering groups. */
  groups: GroupCounts;
  /** True when this server's last claim of the queue was held back by its rate. */
  rate_held: boolean;
}

/** The answer to a nack. */
export interface NackResult {
  /** The job. */
  id: number;
  /** Its queue. */
  queue: string;
  /** `delayed`, `pending` or `dead`. */
  state: JobState;
  /** When it runs again (for dead: when it died). */
  run_at: number;
  /** The queue it moved to instead of dying here (its queue's `dead_letter_queue`), if it did. */
  moved_to?: string;
}

/** The answer to an ack. */
export interface AckResult {
  /** The job. */
  id: number;
  /** Its queue. */
  queue: string;
  /**
   * True when the lease's end may let a waiting job be claimed that a limit held back (a slot
   * of its group, of its queue's concurrency): the queue's consumers should be offered it again.
   */
  frees: boolean;
}

/** The answer to a cancel. */
export interface CancelResult {
  /** The job. */
  id: number;
  /** Its queue. */
  queue: string;
  /** `cancelled`, or the state it had when it was removed. */
  state: JobState;
  /** True when a finished job was deleted rather than cancelled. */
  removed: boolean;
  /** The token of the lease that was revoked, if the job was leased. */
  revoked_token: string | null;
}

/**
 * What a write did to flows beyond the jobs it was asked about (core/flow.ts): jobs it released
 * from blocked, and jobs it cancelled because a prerequisite failed. The store tells its
 * {@linkcode Store.onReleased} listener once the write is committed.
 */
export interface Released {
  /** Queues that gained pending jobs. */
  ready: string[];
  /** The earliest `run_at` of jobs that became delayed, or null. */
  due: number | null;
  /** Jobs that ended (cancelled because a prerequisite failed). */
  ended: number[];
}

/** What cancelling a flow did. */
export interface FlowCancelled {
  /** The flow. */
  id: number;
  /** How many of its jobs were cancelled. */
  cancelled: number;
  /** Their ids. */
  ids: number[];
  /** The leases revoked: `[job id, token, queue]`. */
  revoked: [number, string, string][];
}

/** A lease that ended without an ack (expiry, disconnect). */
export interface EndedLease {
  /** The job. */
  id: number;
  /** Its queue. */
  queue: string;
  /** The token that no longer holds the job. */
  token: string;
  /** Where the job went: `pending` or `dead`. */
  state: JobState;
  /** The queue it moved to instead of dying here (its queue's `dead_letter_queue`), if it did. */
  moved_to?: string;
}

/** The names of the queues a store knows, and how many. */
export interface KnownQueues {
  /** Whether the queue is known. */
  has(queue: string): boolean;
  /** How many queues are known. */
  readonly size: number;
}

/** The outcome of advancing time: due delayed jobs made pending, expired leases ended. */
export interface TickResult {
  /**
   * Queues that gained pending jobs, or whose leases expired (which frees a slot of a group or of
   * a concurrency even when the job went to dead).
   */
  woken: string[];
  /** Leases that expired. */
  expired: EndedLease[];
  /** True when the chunk was full: more may be due, and the caller should tick again. */
  more: boolean;
}

/** Which dead jobs a requeue takes: these ids, or the oldest after an id (a cursor). */
export type DeadJobs = { readonly ids: readonly number[] } | { readonly after: number };

/** What one requeue transaction did. */
export interface RequeueResult {
  /** How many dead jobs it made pending. */
  requeued: number;
  /** The highest id it requeued, or null when it requeued none. */
  last: number | null;
}

/** A lease to give back, identified by job and token. */
export interface LeaseRef {
  /** The job. */
  id: number;
  /** The token that holds it. */
  token: string;
  /**
   * True when the delivery never reached anyone (its frame could not be sent, the long-poll
   * caller had left): the job returns to pending with the attempt not counted.
   */
  undelivered?: boolean;
}

/** Figures about commits, for metrics and benchmarks. */
export interface CommitStats {
  /** Transactions committed. */
  commits: number;
  /** Operations carried by them. */
  operations: number;
  /** The largest batch seen. */
  largest_batch: number;
  /** How many commits carried 1, 2–3, 4–7, 8–15, … operations (index = floor(log2(size))). */
  batch_histogram: number[];
  /** Total time spent committing, ms. */
  commit_ms: number;
  /** SQL statements the store has run (BEGIN and COMMIT included), where it counts them. */
  statements?: number;
}

/** Commit figures before the first commit. */
export function emptyCommitStats(): CommitStats {
  return { commits: 0, operations: 0, largest_batch: 0, batch_histogram: [], commit_ms: 0 };
}

/** Adds one successful commit of `size` operations that took `ms` to `stats`. */
export function countCommit(stats: CommitStats, size: number, ms: number): void {
  stats.commits++;
  stats.operations += size;
  stats.commit_ms += ms;
  if (size > stats.largest_batch) stats.largest_batch = size;
  const bucket = Math.floor(Math.log2(size));
  while (stats.batch_histogram.length <= bucket) stats.batch_histogram.push(0);
  stats.batch_histogram[bucket]++;
}

/** A copy of `stats` that later commits do not change. */
export function copyCommitStats(stats: CommitStats): CommitStats {
  return { ...stats, batch_histogram: [...stats.batch_histogram] };
}

/** What a store can do beyond the common contract; conformance cases are gated on these. */
export interface StoreCapabilities {
  /** Several servers may use the database at once, each with its own store. */
  readonly shared: boolean;
  /** The database lives in local files, which {@linkcode Store.fileSizes} reports. */
  readonly localFiles: boolean;
}

/** Why a lease ended somewhere else, as another server's store reports it. */
export type RemoteLeaseEnd = "settled" | "cancelled" | "expired";

/** News from the store about what other servers sharing its database did. */
export type StoreEvent =
  /** Jobs of `queue` may have become ready (enqueued, retried, promoted, resumed). */
  | { readonly kind: "ready"; readonly queue: string }
  /** The lease `token` on job `id` was ended by another server. */
  | {
    readonly kind: "lease_ended";
    readonly id: number;
    readonly token: string;
    readonly why: RemoteLeaseEnd;
  }
  /** News may have been missed (a reconnect, the polling interval): look at everything again. */
  | { readonly kind: "resync" }
  /** Job `id`, which this server watches ({@linkcode Peers.watch}), ended on another server. */
  | { readonly kind: "ended"; readonly id: number }
  /**
   * Another server stored progress of job `id`, which this server watches; `progress` is its
   * JSON text, or null when it was too large to send (read the job).
   */
  | {
    readonly kind: "progress";
    readonly id: number;
    readonly at: number;
    readonly progress: string | null;
  }
  /**
   * The ready backlog of `queue`, which this server feeds and only other servers consume, was
   * counted again (see {@linkcode Peers.backlogHint}): `delivered` jobs left it since the last
   * count; `stalled` when none did for a while although jobs were ready (the queue paused, its
   * limits at work, or its consumers busy), so the backlog is not the server's to work down.
   */
  | {
    readonly kind: "backlog";
    readonly queue: string;
    readonly delivered: number;
    readonly stalled: boolean;
  }
  /** The other servers' consumers of `queue` changed: their summed prefetch is not what it was. */
  | { readonly kind: "consumers"; readonly queue: string };

/** Which page of a queue's jobs in one state {@linkcode Store.listJobs} answers. */
export interface JobPage {
  /** The state listed. */
  state: JobState;
  /** `oldest` first (ascending ids) or `newest` first (descending ids). */
  order: "oldest" | "newest";
  /**
   * The cursor: only jobs past this id in the listing's order (greater ids for `oldest`, smaller
   * for `newest`); null for the first page.
   */
  after: number | null;
  /** Most jobs in the page. */
  limit: number;
}

/** The answer to a {@linkcode Store.runNow}. */
export interface RunNowResult {
  /** The job. */
  id: number;
  /** Its queue. */
  queue: string;
  /** Always `pending`. */
  state: JobState;
  /** When it became available: now, or earlier if it was already pending. */
  run_at: number;
}

/** How many schedules a store holds, by whether they are paused. */
export interface ScheduleCounts {
  /** Schedules that tick. */
  active: number;
  /** Paused schedules. */
  paused: number;
}

/**
 * A schedule's tick riding on an {@linkcode Store.enqueue}: the jobs are stored, and the
 * schedule moved past the tick, in one transaction, and only if the schedule is still as it was
 * read (same revision, same `next_at`, not paused). Otherwise nothing is stored and the enqueue
 * fails with `conflict`: another server took the tick, or the schedule changed meanwhile.
 */
export interface ScheduleTick {
  /** The schedule. */
  name: string;
  /** Its revision as read. */
  revision: number;
  /** Its `next_at` as read: the tick the caller found due. */
  due_at: number;
  /** The last tick the jobs stand for, or null when the policy skipped every due tick. */
  last_tick_at: number | null;
  /** Its next tick after these, stored as its new `next_at`. */
  next_at: number | null;
}

/** A durable home for jobs. */
export interface Store {
  /** The database engine and version, for the startup log (`SQLite 3.53.2`). */
  readonly engine: string;
  /** What this store can do beyond the common contract. */
  readonly capabilities: StoreCapabilities;
  /** What this server hears from, and tells, the other servers sharing the database. */
  readonly peers: Peers;
  /**
   * Stores jobs all-or-nothing. A job without its own `max_attempts`, `lease_ms` or `backoff`
   * takes its queue's as the transaction reads them (`withQueueDefaults` in
   * core/queue_settings.ts), and without those the server's. A job whose key is held answers the
   * holder's id and applies its `on_duplicate` to it (the rules of `core/dedup.ts`), in batch
   * order. With `tick`, also records a schedule's tick in the same transaction (see
   * {@linkcode ScheduleTick}); the schedule's `last_job_id` becomes the last job's id.
   */
  enqueue(queue: string, jobs: NewJob[], now: number, tick?: ScheduleTick): Promise<Enqueued[]>;
  /**
   * Leases up to `max` pending jobs of a queue, highest priority first then oldest, unless the
   * queue is paused. Never more jobs of one group than the queue's group limit are leased at
   * once; groups with room take turns (see docs/api.md, "Groups"). `lease_ms` null means each
   * job's own lease length, else the server's. A flow's job comes with its prerequisites'
   * outcomes (`outcomesOf` in core/flow.ts).
   */
  claim(queue: string, max: number, lease_ms: number | null, now: number): Promise<Delivery[]>;
  /**
   * Leases pending jobs for several consumers at once, in one atomic step: the jobs (in claim
   * order) are dealt round-robin over `wants`, each taking at most its `max`, so a burst of
   * fewer jobs than the total credit is spread evenly. Answers one list per want.
   */
  claimFair(queue: string, wants: ClaimWant[], now: number): Promise<Delivery[][]>;
  /**
   * Completes a leased job; repeating the same token's ack answers the same while the job is
   * stored. Given `retention`, the ack deletes the job instead when core/lifecycle.ts's
   * `deletedAtAck` says so and the job is in no flow; without it, the job is kept done.
   */
  ack(
    id: number,
    token: string,
    result: string | null,
    now: number,
    retention?: DoneRetention,
  ): Promise<AckResult>;
  /** Gives a leased job back for a retry later, or to dead. */
  nack(id: number, token: string, request: NackRequest, now: number): Promise<NackResult>;
  /** Moves a lease's expiry to now + `lease_ms` (null: the length in force). */
  extend(
    id: number,
    token: string,
    lease_ms: number | null,
    now: number,
  ): Promise<{ id: number; expires_at: number }>;
  /** Records a checkpoint (JSON text) on a leased job. */
  checkpoint(id: number, token: string, data: string, now: number): Promise<{ id: number }>;
  /**
   * Records a progress report (JSON text) on a leased job, fenced like a checkpoint; the last
   * one wins. Reports arriving together may share one statement.
   */
  progress(id: number, token: string, progress: string, now: number): Promise<{ id: number }>;
  /** The queue of a job, or null if there is no such job (cheaper than reading the job). */
  queueOf(id: number): Promise<string | null>;
  /** Which of `ids` are jobs still stored, in one read. */
  storedIds(ids: readonly number[]): Promise<Set<number>>;
  /** Reads a job, or null. */
  get(id: number): Promise<Job | null>;
  /**
   * Creates a flow all-or-nothing (core/flow.ts): its nodes' jobs in `order` (prerequisites
   * first, as `checkFlowNodes` answers it), each blocked while it has prerequisites, and its
   * edges. A flow whose key is held answers the holder's nodes, `deduplicated`.
   */
  createFlow(flow: NewFlow, order: number[], now: number): Promise<FlowCreated>;
  /**
   * Adds nodes to the flow of job `id`, whose lease `token` must be current (a running node
   * fans out). They may depend on the flow's nodes; an edge to one that has ended is resolved
   * at once. Checks them with `checkFlowNodes` against the flow's refs.
   */
  addFlowNodes(id: number, token: string, nodes: NewFlowNode[], now: number): Promise<FlowCreated>;
  /** Reads a flow with its nodes, or null. */
  getFlow(id: number): Promise<Flow | null>;
  /**
   * At most `limit` flows without their nodes: by id after `after` (oldest first), or with
   * `newest`, by id before `after` (0: from the newest).
   */
  listFlows(after: number, limit: number, newest?: boolean): Promise<FlowSummary[]>;
  /**
   * Cancels every node of a flow that has not ended (leased ones lose their lease); null when
   * there is no such flow.
   */
  cancelFlow(id: number, now: number): Promise<FlowCancelled | null>;
  /**
   * Sets the listener told, after each commit that released or cancelled flow jobs beyond the
   * ones a caller named, what it did (see {@linkcode Released}). One listener: the broker.
   */
  onReleased(listener: (released: Released) => void): void;
  /** Cancels a waiting or leased job, or removes a finished one. */
  cancel(id: number, now: number): Promise<CancelResult>;
  /** Pauses or resumes delivery from a queue. */
  setPaused(queue: string, paused: boolean): Promise<void>;
  /**
   * A queue's settings as last committed, by any server sharing the database; the defaults for a
   * queue without any.
   */
  settings(queue: string): Promise<QueueSettings>;
  /**
   * Replaces a queue's settings as a whole (`now` is recorded as when they changed); answers
   * them as stored. Settings survive a restart, and a queue with settings is a known queue even
   * without jobs. Setting the defaults removes the queue's settings. Other servers sharing the
   * database hear the queue may be ready (a limit may have been raised). Jobs already stored
   * keep the defaults they were given; every claim from the commit on applies the new limits.
   */
  putSettings(queue: string, settings: QueueSettings, now: number): Promise<QueueSettings>;
  /**
   * One ordering group of `queue` at `now`: its settings (the defaults when it has none), its
   * jobs pending and leased, its limit, and what holds it back (core/group_settings.ts).
   */
  getGroup(queue: string, group: string, now: number): Promise<GroupState>;
  /**
   * The groups of `queue` that have settings of their own or jobs pending or leased, by name
   * (byte order) after `after` (null: from the first), at most `limit`, as {@linkcode getGroup}.
   */
  listGroups(
    queue: string,
    after: string | null,
    limit: number,
    now: number,
  ): Promise<GroupState[]>;
  /**
   * Replaces a group's settings (null or the defaults remove them; `now` is recorded as when
   * they changed) and answers the group as {@linkcode getGroup}. The claim applies them from the
   * commit on, on every server sharing the database.
   */
  putGroupSettings(
    queue: string,
    group: string,
    settings: GroupSettings | null,
    now: number,
  ): Promise<GroupState>;
  /**
   * Counts for one queue (zeros if unknown), or for all known queues (with jobs or settings), by
   * name in byte order (the lists' pages rely on it). `now` tells which groups' rates hold them
   * (without it: those their rates held at their last claim).
   */
  stats(queue?: string, now?: number): Promise<QueueCounts[]>;
  /** A page of a queue's jobs in one state, ordered by id (the job browser). */
  listJobs(queue: string, page: JobPage): Promise<Job[]>;
  /**
   * Reads one window of jobs for a bulk action: the jobs of `filter.queue` among the `limit`
   * ids that begin at the first stored id above `after` (jobs of any queue count towards the
   * window, so a call reads at most `limit` rows, by primary key, however rare the matches), and
   * answers those that `jobMatches` (core/job_filter.ts) takes, with `next` = the window's last
   * id. `next` is null when no job had an id above `after`. Changes nothing.
   */
  findJobs(filter: JobFilter, after: number, limit: number): Promise<FoundJobs>;
  /**
   * Makes a delayed job pending now (`run_at` = now). A job already pending is left as it is and
   * answered the same; any other state fails with `conflict`, an unknown id with `not_found`.
   */
  runNow(id: number, now: number): Promise<RunNowResult>;
  /**
   * Moves up to `limit` of `from`'s pending jobs without a group, by priority then age, to `to`,
   * or, when `to` is null, each back to the queue it was dead-lettered from (`dead_lettered_from`,
   * then cleared; jobs without one stay), in one transaction. A moved job is pending there from
   * `now`, with its attempts as they were, and leaves its dedup key behind. Answers the queues the
   * jobs went to, one entry per job.
   */
  moveWaiting(from: string, to: string | null, limit: number, now: number): Promise<string[]>;
  /**
   * Makes dead jobs of `queue` pending again with attempts reset, in one transaction: those of
   * `which.ids` (at most `limit`), or its `limit` oldest with an id above `which.after`.
   */
  requeueDead(
    queue: string,
    which: DeadJobs,
    now: number,
    limit: number,
  ): Promise<RequeueResult>;
  /**
   * Promotes due delayed jobs and ends the expired leases that `leaseEndDue` (core/lifecycle.ts)
   * says are due, given what `mine` knows of this server's claims and whether other servers
   * share the database; at most `limit` of each in one
   * transaction (a store default when absent); `more` says whether to call again.
   */
  tick(now: number, mine: HandOvers, limit?: number): Promise<TickResult>;
  /** Ends leases whose holder is gone: back to pending at once, or dead if attempts are used. */
  release(leases: LeaseRef[], now: number): Promise<EndedLease[]>;
  /**
   * How many jobs of the queue are ready (pending) as of the last commit when the store knows it
   * exactly and cheaply (the sole writer of its database); undefined otherwise. Only a hint for
   * skipping empty claims.
   */
  readyHint(queue: string): number | undefined;
  /**
   * When the last claim of `queue` was held back by the queue's rate: when its next token comes
   * (ms), for a timer that offers the queue again then; null otherwise.
   */
  claimHeldUntil(queue: string): number | null;
  /**
   * The earliest delayed `run_at` or lease deadline as `leaseDeadline` (core/lifecycle.ts)
   * places it at `now` (a lease that ran out unended is due a grace after its end), or null.
   */
  nextDeadline(now: number): Promise<number | null>;
  /**
   * The queues known (holding jobs, paused, or with settings), as of the last commit or, where
   * several servers write the database, as last counted plus those enqueued into here since. A
   * queue whose last job is gone is forgotten.
   */
  knownQueues(): KnownQueues;
  /**
   * Creates or replaces a schedule with `next_at` as its next tick, unpaused, its revision one
   * more than before; a replaced one keeps `created_at`, `last_tick_at` and `last_job_id`.
   * Creating one while `limit` schedules exist throws `conflict`; replacing one never does.
   * Exact across servers sharing one database.
   */
  putSchedule(
    definition: ScheduleDefinition,
    next_at: number | null,
    now: number,
    limit?: number,
  ): Promise<Schedule>;
  /** How many schedules there are, running and paused. */
  countSchedules(): Promise<ScheduleCounts>;
  /** Reads a schedule, or null. */
  getSchedule(name: string): Promise<Schedule | null>;
  /** Every schedule, by name in byte order (the lists' pages rely on it). */
  listSchedules(): Promise<Schedule[]>;
  /** Deletes a schedule (its jobs stay); answers false if there was none. */
  deleteSchedule(name: string): Promise<boolean>;
  /**
   * Pauses or resumes a schedule, `next_at` becoming its next tick (the caller computes it from
   * now on resume, so ticks that came due while paused are skipped). Null if there is none.
   */
  pauseSchedule(
    name: string,
    paused: boolean,
    next_at: number | null,
    now: number,
  ): Promise<Schedule | null>;
  /** Unpaused schedules whose `next_at` is at or before `now`, earliest first, at most `limit`. */
  dueSchedules(now: number, limit: number): Promise<Schedule[]>;
  /** The earliest `next_at` of an unpaused schedule, or null. */
  nextScheduleAt(): Promise<number | null>;
  /**
   * The retention sweep: deletes done and cancelled jobs finished longer ago than their queue's
   * `retain_done_ms` (else `retainDoneMs`, the server's), dead jobs finished longer ago than their
   * queue's `retain_dead_ms` (none without one), and pending jobs due longer ago than their
   * queue's `retain_pending_ms` (none without one); answers how many.
   */
  sweepFinished(now: number, retainDoneMs: number): Promise<number>;
  /** Proves the database takes a write. */
  probeWritable(): Promise<void>;
  /** Commit figures so far. */
  commitStats(): CommitStats;
  /** Bytes of the database file and its WAL, or null for a store without local files. */
  fileSizes(): { database: number; wal: number } | null;
  /**
   * Flushes pending writes, checkpoints and closes. Later calls reject with `unavailable`; a
   * repeated close() resolves only when the first has finished.
   */
  close(): Promise<void>;
}

/**
 * What the servers sharing one database tell each other, beside the storage: news of what the
 * others did ({@linkcode StoreEvent}s), consumer counts, and estimates of a backlog that this
 * server feeds and others consume. Best effort throughout: lost news only delays a server, which
 * learns at the next `resync`, poll or lease expiry.
 */
export interface Peers {
  /**
   * Calls `listener` with news of what other servers did; answers a function that stops it.
   * Peers of a database no other server shares never call it.
   */
  listen(listener: (event: StoreEvent) => void): () => void;
  /**
   * Tells the other servers that a lease ended here which one of them may hold (an ack by HTTP
   * of a job pushed over another server's WebSocket). A lost message only delays the holder,
   * who learns at the lease's expiry.
   */
  announce(id: number, token: string, why: RemoteLeaseEnd): void;
  /**
   * Records how many consumers this server has on `queue` and their summed prefetch (what the
   * other servers sharing the database measure the queue's backlog against).
   */
  setConsumers(queue: string, n: number, prefetch: number): void;
  /**
   * Someone here waits for or watches job `id`: the other servers tell of its end and progress
   * (as `ended` and `progress` events) until {@linkcode Peers.unwatch}. Calls pair up.
   */
  watch(id: number): void;
  /** One watch of job `id` here ended. */
  unwatch(id: number): void;
  /** How many consumers `queue` has on every server sharing the database, as last heard. */
  consumers(queue: string): number;
  /** The summed prefetch of the other servers' consumers of `queue`, as last heard. */
  remotePrefetch(queue: string): number;
  /**
   * An estimate of how many jobs of the queue are ready, for the intake gate only, where the
   * store cannot know it exactly (its `readyHint` is undefined: several servers write the
   * database); undefined when there is none. Never used to skip a claim.
   */
  backlogHint(queue: string): number | undefined;
  /**
   * The part of {@linkcode Peers.backlogHint} counted in the database (at the last claim or
   * count of the backlog), without the jobs enqueued here since, which may have been delivered
   * already; undefined when there is no estimate.
   */
  backlogSeen(queue: string): number | undefined;
}

/**
 * The peers of a store no other server shares: nothing to hear and nobody to tell; consumer
 * counts are this server's own.
 */
export class LocalPeers implements Peers {
  readonly #consumers = new Map<string, number>();

  listen(): () => void {
    return () => {};
  }

  announce(): void {}

  watch(): void {}

  unwatch(): void {}

  setConsumers(queue: string, n: number): void {
    if (n === 0) this.#consumers.delete(queue);
    else this.#consumers.set(queue, n);
  }

  consumers(queue: string): number {
    return this.#consumers.get(queue) ?? 0;
  }

  remotePrefetch(): number {
    return 0;
  }

  backlogHint(): undefined {
    return undefined;
  }

  backlogSeen(): undefined {
    return undefined;
  }
}
