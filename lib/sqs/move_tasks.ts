/**
 * SQS message move tasks (StartMessageMoveTask, ListMessageMoveTasks, CancelMessageMoveTask):
 * a background task that moves the waiting messages of a dead-letter queue back to the queues
 * they were dead-lettered from, or to one destination, at most `MaxNumberOfMessagesPerSecond`.
 * Each step is one `Broker.moveWaiting` transaction of a few jobs, resting between steps, so a
 * task never holds the server; a message received from the dead-letter queue meanwhile stays
 * where it is. Tasks live in this process: a restart ends a running one (its moved messages
 * stay moved), and only the last ten of a queue are listed.
 *
 * @module
 */

import type { Broker } from "../core/broker.ts";
import { QUEUE_NAME } from "../core/limits.ts";
import { isFifo, queueArn, type SqsIdentity } from "./queue_url.ts";
import { type Action, stringInput } from "./action_context.ts";
import { invalidParameter, missingParameter, SqsError } from "./sqs_error.ts";

/** The most messages a task moves per second, as AWS allows. */
export const MAX_MOVE_RATE = 500;
/** How many messages one step moves without a rate of its own. */
const STEP = 100;
/** How many tasks of a source queue are kept for ListMessageMoveTasks. */
const KEPT = 10;

type Status = "RUNNING" | "COMPLETED" | "CANCELLING" | "CANCELLED" | "FAILED";

/** One task. */
interface MoveTask {
  handle: string;
  source: string;
  destination: string | null;
  rate: number | null;
  status: Status;
  moved: number;
  toMove: number;
  startedAt: number;
  failure: string | null;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** The tasks of this server, by source queue, most recent last. */
export class MoveTasks {
  readonly #broker: Broker;
  readonly #identity: SqsIdentity;
  readonly #bySource = new Map<string, MoveTask[]>();
  #closed = false;

  /** Tasks over `broker`, naming queues by `identity`'s ARNs. */
  constructor(broker: Broker, identity: SqsIdentity) {
    this.#broker = broker;
    this.#identity = identity;
  }

  /** Starts moving `source`'s waiting messages; answers the task's handle. */
  start(source: string, destination: string | null, rate: number | null, toMove: number): string {
    const tasks = this.#bySource.get(source) ?? [];
    if (tasks.some((t) => t.status === "RUNNING" || t.status === "CANCELLING")) {
      throw invalidParameter("SourceArn", "A message move task is already running on this queue.");
    }
    const task: MoveTask = {
      handle: `${crypto.randomUUID()}:${source}`,
      source,
      destination,
      rate,
      status: "RUNNING",
      moved: 0,
      toMove,
      startedAt: Date.now(),
      failure: null,
      timer: undefined,
    };
    tasks.push(task);
    if (tasks.length > KEPT) tasks.shift();
    this.#bySource.set(source, tasks);
    this.#schedule(task, 0);
    return task.handle;
  }

  /** The tasks of `source`, most recent first, at most `max`. */
  list(source: string, max: number): Record<string, unknown>[] {
    const tasks = [...(this.#bySource.get(source) ?? [])].reverse().slice(0, max);
    return tasks.map((t) => {
      const out: Record<string, unknown> = {
        Status: t.status,
        SourceArn: queueArn(this.#identity, t.source),
        ApproximateNumberOfMessagesMoved: t.moved,
        ApproximateNumberOfMessagesToMove: t.toMove,
        StartedTimestamp: t.startedAt,
      };
      if (t.status === "RUNNING") out.TaskHandle = t.handle;
      if (t.destination !== null) {
        out.DestinationArn = queueArn(this.#identity, t.destination);
      }
      if (t.rate !== null) out.MaxNumberOfMessagesPerSecond = t.rate;
      if (t.failure !== null) out.FailureReason = t.failure;
      return out;
    });
  }

  /** Cancels a running task; answers how many it moved. */
  cancel(handle: string): number {
    const source = handle.slice(handle.indexOf(":") + 1);
    const task = this.#bySource.get(source)?.find((t) => t.handle === handle);
    if (task === undefined || task.status !== "RUNNING") {
      throw new SqsError(
        "ResourceNotFoundException",
        "The task handle is not that of a running task.",
      );
    }
    clearTimeout(task.timer);
    task.status = "CANCELLED";
    return task.moved;
  }

  /** Stops every running task (the server is shutting down). */
  close(): void {
    this.#closed = true;
    for (const tasks of this.#bySource.values()) {
      for (const task of tasks) {
        if (task.status !== "RUNNING") continue;
        clearTimeout(task.timer);
        task.status = "FAILED";
        task.failure = "The server shut down";
      }
    }
  }

  #schedule(task: MoveTask, delayMs: number): void {
    if (this.#closed) return;
    task.timer = setTimeout(() => {
      this.#step(task).catch((error) => {
        task.status = "FAILED";
        task.failure = error instanceof Error ? error.message : String(error);
      });
    }, delayMs);
  }

  async #step(task: MoveTask): Promise<void> {
    if (task.status !== "RUNNING") return;
    // With a rate, a step of a tenth of a second's messages (at least one) each 1/rate apart.
    const batch = task.rate === null ? STEP : Math.max(1, Math.floor(task.rate / 10));
    const began = performance.now();
    const moved = await this.#broker.moveWaiting(task.source, task.destination, batch);
    if (task.status !== "RUNNING") return;
    task.moved += moved;
    if (moved < batch) {
      task.status = "COMPLETED";
      return;
    }
    const took = performance.now() - began;
    const pace = task.rate === null ? took : Math.max(took, (batch * 1000) / task.rate);
    this.#schedule(task, Math.ceil(pace));
  }
}

/** The queue an ARN of this server names, or `InvalidParameterValue` naming `param`. */
function queueOfArn(arn: string, param: string, identity: SqsIdentity): string {
  const prefix = queueArn(identity, "");
  const queue = arn.startsWith(prefix) ? arn.slice(prefix.length) : "";
  if (!QUEUE_NAME.test(queue)) {
    throw invalidParameter(param, `Expected the ARN of a queue of this server (${prefix}NAME).`);
  }
  return queue;
}

/** The three move-task actions over `tasks`. */
export function moveTaskActions(tasks: MoveTasks): Readonly<Record<string, Action>> {
  const start: Action = async (services, call) => {
    const sourceArn = stringInput(call.input, "SourceArn");
    if (sourceArn === undefined) throw missingParameter("SourceArn");
    const source = queueOfArn(sourceArn, "SourceArn", services.identity);
    const destinationArn = stringInput(call.input, "DestinationArn");
    const destination = destinationArn === undefined
      ? null
      : queueOfArn(destinationArn, "DestinationArn", services.identity);
    const rate = call.input.MaxNumberOfMessagesPerSecond as number | undefined;
    if (rate !== undefined && (rate < 1 || rate > MAX_MOVE_RATE)) {
      throw invalidParameter(
        "MaxNumberOfMessagesPerSecond",
        `Must be between 1 and ${MAX_MOVE_RATE}, if provided.`,
      );
    }
    for (const queue of [source, destination]) {
      if (queue !== null && !call.principal.allowsQueue(queue)) {
        throw new SqsError("AccessDenied", `The token cannot reach queue ${queue}.`);
      }
    }
    const stats = await services.broker.stats();
    const sources = stats.filter((s) => s.settings.dead_letter_queue === source);
    if (sources.length === 0) {
      throw invalidParameter(
        "SourceArn",
        "The source must be a dead-letter queue: no queue names it in its RedrivePolicy.",
      );
    }
    if (destination !== null && isFifo(destination) !== isFifo(source)) {
      throw invalidParameter("DestinationArn", "The destination must be of the source's type.");
    }
    const pending = stats.find((s) => s.name === source)?.counts.pending ?? 0;
    return { TaskHandle: tasks.start(source, destination, rate ?? null, pending) };
  };
  const list: Action = (services, call) => {
    const sourceArn = stringInput(call.input, "SourceArn");
    if (sourceArn === undefined) throw missingParameter("SourceArn");
    const source = queueOfArn(sourceArn, "SourceArn", services.identity);
    const max = call.input.MaxResults as number | undefined;
    if (max !== undefined && (max < 1 || max > 10)) {
      throw invalidParameter("MaxResults", "Must be between 1 and 10, if provided.");
    }
    return Promise.resolve({ Results: tasks.list(source, max ?? 1) });
  };
  const cancel: Action = (_services, call) => {
    const handle = stringInput(call.input, "TaskHandle");
    if (handle === undefined) throw missingParameter("TaskHandle");
    return Promise.resolve({ ApproximateNumberOfMessagesMoved: tasks.cancel(handle) });
  };
  return {
    StartMessageMoveTask: start,
    ListMessageMoveTasks: list,
    CancelMessageMoveTask: cancel,
  };
}
