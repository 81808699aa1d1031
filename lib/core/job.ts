/**
 * The job record, a delivery (a job plus its lease), and their JSON forms.
 *
 * JSON values supplied by users (payload, checkpoint, result) are carried as the JSON text that
 * was stored, and spliced into answers as they are: no parse and re-stringify on the way out.
 *
 * @module
 */

/**
 * Where a job is in its life. `blocked`: a flow's job waiting for its prerequisites
 * (core/flow.ts).
 */
export type JobState =
  | "blocked"
  | "pending"
  | "delayed"
  | "leased"
  | "done"
  | "dead"
  | "cancelled";

/** Every job state, in lifecycle order. */
export const JOB_STATES: readonly JobState[] = [
  "blocked",
  "pending",
  "delayed",
  "leased",
  "done",
  "dead",
  "cancelled",
];

/** What a duplicate asks of the job holding its key (the rules are in `dedup.ts`). */
export type OnDuplicate = "ignore" | "replace" | "extend";

/** Every `on_duplicate` mode. */
export const ON_DUPLICATE: readonly OnDuplicate[] = ["ignore", "replace", "extend"];

/** What happened to a duplicate: the answer's `duplicate` field (null for a new job). */
export type DuplicateOutcome = "ignored" | "replaced" | "extended";

/** Per-job retry backoff. */
export interface Backoff {
  /** The first retry's delay before jitter, in ms. */
  base_ms: number;
  /** The longest delay, in ms. */
  max_ms: number;
}

/** A stored job. `payload`, `attributes`, `checkpoint` and `result` hold JSON text. */
export interface Job {
  /** Unique, increasing id. */
  id: number;
  /** The queue's name. */
  queue: string;
  /** Current state. */
  state: JobState;
  /** The payload as JSON text. */
  payload: string;
  /** Its attributes as JSON text (core/attributes.ts), or null for none. */
  attributes: string | null;
  /** Higher first. */
  priority: number;
  /** Dedup key, unique per queue among the stored jobs that still hold theirs. */
  key: string | null;
  /** When the key stops blocking duplicates, or null: as long as the job is stored. */
  key_expires_at: number | null;
  /** Ordering group: at most the queue's `group_limit` of its jobs are leased at once. */
  group: string | null;
  /** Deliveries so far. */
  attempts: number;
  /** Deliveries allowed before the job is dead. */
  max_attempts: number;
  /** When the job is (or was) due, ms since the epoch. */
  run_at: number;
  /** The job's own lease length, or null for the server's. */
  lease_ms: number | null;
  /** The job's own backoff, or null for the server's. */
  backoff: Backoff | null;
  /** When it was enqueued. */
  created_at: number;
  /** The last checkpoint as JSON text, or null. */
  checkpoint: string | null;
  /** The last progress a lease holder reported, as JSON text, or null. */
  progress: string | null;
  /** When that progress was reported, or null. */
  progress_at: number | null;
  /** The ack's result as JSON text, or null. */
  result: string | null;
  /** The last nack's error, or null. */
  last_error: string | null;
  /** When the current lease ends, while leased. */
  lease_expires_at: number | null;
  /** When the job reached done, dead or cancelled. */
  finished_at: number | null;
  /** The queue it ran out of attempts in and was moved from (its dead-letter queue is this one). */
  dead_lettered_from: string | null;
  /** The flow it is a node of, absent when none (core/flow.ts). */
  flow?: JobFlow;
}

/** A job's place in its flow. */
export interface JobFlow {
  /** The flow's id. */
  id: number;
  /** The job's ref in it. */
  ref: string;
}

/** A prerequisite's outcome, as a released job's delivery carries it. */
export interface Outcome {
  /** The prerequisite's ref. */
  ref: string;
  /** Its job id. */
  id: number;
  /** The state it ended in (or its state now, for a prerequisite run again since). */
  state: JobState;
  /** Its ack's result as JSON text, or null. */
  result: string | null;
  /** Its last error, or null. */
  last_error: string | null;
  /** True when its result was left out to keep the delivery within its cap. */
  result_omitted: boolean;
}

/** A released job's prerequisites' outcomes, as its delivery carries them. */
export interface Outcomes {
  /** The outcomes carried, in `depends_on` order. */
  outcomes: Outcome[];
  /** How many more were left out (past `MAX_OUTCOME_BYTES` in core/flow.ts). */
  omitted: number;
}

/** The lease a delivery carries. */
export interface Lease {
  /** The fencing token: ack, nack, extend and checkpoint must present it. */
  token: string;
  /** When the lease ends unless extended. */
  expires_at: number;
}

/** A job handed to a consumer. */
export interface Delivery {
  /** The job as it is after being leased. */
  job: Job;
  /** The lease taken. */
  lease: Lease;
  /** For a flow's job with prerequisites: their outcomes (core/flow.ts, `outcomesOf`). */
  prerequisites?: Outcomes;
}

/** A job to store, validated and resolved (absolute `run_at`). */
export interface NewJob {
  /** The payload as JSON text. */
  payload: string;
  /** Its attributes as JSON text (core/attributes.ts), or null for none. @default null */
  attributes?: string | null;
  /** Higher first. */
  priority: number;
  /** Dedup key or null. */
  key: string | null;
  /** How long after the enqueue the key blocks duplicates, ms. @default null (as long as stored) */
  key_ttl_ms?: number | null;
  /** What a duplicate of a job holding the key does to it. @default "ignore" */
  on_duplicate?: OnDuplicate;
  /** Ordering group or null (absent: null). */
  group?: string | null;
  /** When due, ms since the epoch; a value ≤ now means pending at once. */
  run_at: number;
  /** Deliveries allowed, or null for the queue's default (else the server's, 5). */
  max_attempts: number | null;
  /** The job's own lease length, or null for the queue's default (else the server's). */
  lease_ms: number | null;
  /** The job's own backoff, or null for the queue's default (else the server's). */
  backoff: Backoff | null;
}

/** The outcome of enqueueing one job. */
export interface Enqueued {
  /** The new job's id, or the existing one's when deduplicated. */
  id: number;
  /** True when a job with the same key already existed and nothing was stored. */
  deduplicated: boolean;
  /** For a duplicate, what it did to the job holding the key; null for a new job. */
  duplicate: DuplicateOutcome | null;
  /** The state the job is in (used to wake consumers). */
  state: JobState;
  /** When it is due (used to arm the timer of a delayed job). */
  run_at: number;
}

function jsonOrNull(text: string | null): string {
  return text === null ? "null" : text;
}

/** The members of the API's job object as JSON text, without the braces. */
function jobMembers(job: Job): string {
  return `"id":${job.id},"queue":${JSON.stringify(job.queue)},"state":"${job.state}",` +
    `"payload":${job.payload},"attributes":${jsonOrNull(job.attributes)},` +
    `"priority":${job.priority},"key":${JSON.stringify(job.key)},` +
    `"key_expires_at":${job.key_expires_at},` +
    `"group":${JSON.stringify(job.group)},` +
    `"attempts":${job.attempts},"max_attempts":${job.max_attempts},"run_at":${job.run_at},` +
    `"lease_ms":${job.lease_ms},"backoff":${JSON.stringify(job.backoff)},` +
    `"created_at":${job.created_at},"checkpoint":${jsonOrNull(job.checkpoint)},` +
    `"progress":${jsonOrNull(job.progress)},"progress_at":${job.progress_at},` +
    `"result":${jsonOrNull(job.result)},"last_error":${JSON.stringify(job.last_error)},` +
    `"lease_expires_at":${job.lease_expires_at},"finished_at":${job.finished_at},` +
    `"dead_lettered_from":${JSON.stringify(job.dead_lettered_from)}` +
    (job.flow === undefined
      ? ""
      : `,"flow":{"id":${job.flow.id},"ref":${JSON.stringify(job.flow.ref)}}`);
}

/** Prerequisites' outcomes as the JSON text of the delivery's `prerequisites` array. */
function outcomesJson({ outcomes, omitted }: Outcomes): string {
  let out = "";
  for (const o of outcomes) {
    if (out !== "") out += ",";
    out += `{"ref":${JSON.stringify(o.ref)},"id":${o.id},"state":"${o.state}",` +
      `"result":${jsonOrNull(o.result)},"last_error":${JSON.stringify(o.last_error)},` +
      `"result_omitted":${o.result_omitted}}`;
  }
  return omitted === 0 ? `[${out}]` : `[${out}],"prerequisites_omitted":${omitted}`;
}

/**
 * The members of the API's delivery object as JSON text, without the braces: every field of the
 * job (so a retry sees `last_error` and `checkpoint`), plus `attempt` (1-based) and `lease`.
 */
export function deliveryMembers(delivery: Delivery): string {
  const { job, lease, prerequisites } = delivery;
  return `${jobMembers(job)},"attempt":${job.attempts},` +
    `"lease":{"token":"${lease.token}","expires_at":${lease.expires_at}}` +
    (prerequisites === undefined ? "" : `,"prerequisites":${outcomesJson(prerequisites)}`);
}

/** The job as the JSON text of the API's job object. */
export function jobJson(job: Job): string {
  return `{${jobMembers(job)}}`;
}

/** A delivery as the JSON text of the API's delivery object (see {@linkcode deliveryMembers}). */
export function deliveryJson(delivery: Delivery): string {
  return `{${deliveryMembers(delivery)}}`;
}
