/**
 * Which operation needs which access: one table for HTTP and WebSocket alike, so a route and the
 * frame that does the same thing cannot drift apart. The HTTP route table and the WebSocket
 * connection both look their operation up here; `tests/auth/auth_matrix_test.ts` calls every one
 * with every kind of caller.
 *
 * @module
 */

import { type Principal, requireScope, type Scope } from "./tokens.ts";

/**
 * Who may call an operation: a scope, `read` (any valid token), `job` (produce or consume),
 * `consume and produce` (both), `open`.
 */
export type Access = Scope | "read" | "job" | "consume and produce" | "open";

/** Every operation of the API and the access it needs (queue restrictions apply on top). */
export const OPERATIONS = {
  /** Add jobs to a queue (`POST /v1/queues/:queue/jobs`, the `enqueue` frame). */
  enqueue: "produce",
  /** Take jobs from a queue (`POST /v1/queues/:queue/leases`, the `subscribe` frame). */
  lease: "consume",
  /** Settle or touch a held lease (ack, nack, extend, checkpoint, progress; HTTP and frames). */
  settle: "consume",
  /** Read one job (`GET /v1/jobs/:id`). */
  readJob: "job",
  /** Cancel or remove one job (`DELETE /v1/jobs/:id`). */
  cancelJob: "admin",
  /** Read queue counts, settings, groups and the live feed (`GET /v1/queues…`, `GET /v1/events`). */
  readQueues: "read",
  /** Pause or resume a queue. */
  pauseQueue: "admin",
  /**
   * Change a queue's settings or its groups' (`PUT /v1/queues/:queue/settings`, `PUT` and
   * `DELETE /v1/queues/:queue/groups/:group`); reading them is `readQueues`.
   */
  queueSettings: "admin",
  /** List and requeue dead jobs. */
  deadLetters: "admin",
  /** Browse a queue's jobs by state (`GET /v1/queues/:queue/jobs`): shows any job's payload. */
  browseJobs: "admin",
  /** Run a delayed job now (`POST /v1/jobs/:id/run`). */
  runJob: "admin",
  /** Read schedules (`GET /v1/schedules…`): as for queue counts. */
  readSchedules: "read",
  /** Define, delete, pause and resume schedules (`PUT`, `DELETE /v1/schedules/:name`, …). */
  manageSchedules: "admin",
  /** Prometheus metrics (`GET /metrics`). */
  metrics: "admin",
  /** Back up the database into a file on the server's host (`POST`, `GET /v1/backup`). */
  backup: "admin",
  /** Start, follow and stop bulk actions over a filter (`/v1/queues/:queue/bulk`, `/v1/bulk…`). */
  bulkActions: "admin",
  /**
   * Create a flow (`POST /v1/flows`): the caller must hold every queue its nodes name, as if it
   * enqueued each job.
   */
  createFlow: "produce",
  /** Read a flow (`GET /v1/flows/:id`): the caller must hold every queue of its nodes. */
  readFlow: "job",
  /** List flows (`GET /v1/flows`): spans every queue, so closed to a token limited to some. */
  listFlows: "job",
  /** Cancel a flow's jobs (`DELETE /v1/flows/:id`): every queue of its nodes. */
  cancelFlow: "admin",
  /**
   * Add nodes from a running node (`POST /v1/jobs/:id/flow`): a settle with its lease (the job's
   * queue) and an enqueue (the new nodes' queues) at once.
   */
  addFlowNodes: "consume and produce",
  /** Liveness, readiness, the dashboard's files and the API documents. */
  open: "open",
} as const satisfies Record<string, Access>;

/** Throws `forbidden` unless `principal` has the access `access` needs (queues apart). */
export function requireAccess(principal: Principal, access: Access): void {
  if (access === "read" || access === "open") return;
  if (access === "consume and produce") {
    requireScope(principal, "consume");
    requireScope(principal, "produce");
    return;
  }
  requireScope(principal, access === "job" ? "produce or consume" : access);
}
