/**
 * The scheduler: runs schedules' ticks. It keeps one timer, set for the earliest `next_at` of
 * any unpaused schedule (read from the store, so a schedule defined on another server sharing
 * the database is seen at the next `resync`), and at each wake-up enqueues the ticks that came
 * due, as the `missed` policy says (core/schedule.ts).
 *
 * Exactly once: each tick's job goes through the broker's enqueue with a
 * {@linkcode ScheduleTick}, so the store inserts it in the same transaction that moves the
 * schedule past the tick, and only if no one else did first. On PostgreSQL every server runs a
 * scheduler; for each tick one wins and the others get `conflict`, which is normal here.
 *
 * It also answers the schedule operations of the API (define, read, list, delete, pause,
 * resume), validating cron expressions and time zones before anything is stored.
 *
 * @module
 */

import type { Broker } from "./broker.ts";
import { type Clock, EarliestTimer } from "./clock.ts";
import { type CronTimes, parseCron } from "./cron.ts";
import { TegamiError } from "./errors.ts";
import { dueTicks, type Schedule, type ScheduleDefinition, tickJob } from "./schedule.ts";
import { isTickTaken } from "../store/schedule_row.ts";
import type { Store, StoreEvent } from "../store/store.ts";

/** Settings of a {@linkcode Scheduler}. */
export interface SchedulerOptions {
  /** The store holding the schedules. */
  store: Store;
  /** The broker the ticks' jobs are enqueued through (it wakes their consumers). */
  broker: Broker;
  /** The clock the ticks are read on. */
  clock: Clock;
  /** Reports failures of background work (a tick that could not be enqueued). */
  onBackgroundError?: (what: string, error: unknown) => void;
  /** Sees every tick enqueued here: the schedule, the ticks and their jobs' ids. */
  onTicks?: (schedule: Schedule, ticks: number[], ids: number[]) => void;
  /**
   * Most schedules at once: creating one more answers `conflict`. Each ticks up to once a
   * second, so their number bounds the work they make. @default no limit
   */
  maxSchedules?: number;
}

/** How many due schedules one pass reads at a time. */
const DUE_CHUNK = 100;

/** How soon to look again at a tick that another server holds (or that failed), ms. */
const RETRY_MS = 1000;

/** Runs schedules' ticks and answers the schedule operations. */
export class Scheduler {
  readonly #store: Store;
  readonly #broker: Broker;
  readonly #clock: Clock;
  readonly #onError: (what: string, error: unknown) => void;
  readonly #onTicks: SchedulerOptions["onTicks"];
  readonly #maxSchedules: number;
  /** The next due tick of any schedule. */
  readonly #timer: EarliestTimer;
  #running = false;
  #again = false;
  #closed = false;
  #unlisten: (() => void) | null = null;
  /** The last run as a promise, for tests and shutdown. */
  #idle: Promise<void> = Promise.resolve();

  /** Makes a scheduler; call {@linkcode Scheduler.start} to run ticks. */
  constructor(options: SchedulerOptions) {
    this.#store = options.store;
    this.#broker = options.broker;
    this.#clock = options.clock;
    this.#onError = options.onBackgroundError ?? (() => {});
    this.#onTicks = options.onTicks;
    this.#maxSchedules = options.maxSchedules ?? Infinity;
    this.#timer = new EarliestTimer(this.#clock, () => this.#wake());
  }

  /** Enqueues what came due while no server ran (per each `missed` policy) and arms the timer. */
  async start(): Promise<void> {
    this.#unlisten = this.#store.peers.listen((event: StoreEvent) => {
      // Another server may have defined, changed or ticked a schedule: read the deadline again.
      if (event.kind === "resync") this.#wake();
    });
    this.#wake();
    await this.#idle;
  }

  /** Stops the timer; ticks under way finish. */
  close(): void {
    this.#closed = true;
    this.#unlisten?.();
    this.#unlisten = null;
    this.#timer.clear();
  }

  /** Resolves once no pass over due schedules is running. */
  idle(): Promise<void> {
    return this.#idle;
  }

  // ---- the operations ----

  /**
   * Creates or replaces a schedule; its next tick is the first after now. Answers it, and
   * whether it was created. Throws `validation_failed` for a bad cron expression or time zone,
   * `conflict` for a new schedule past {@linkcode SchedulerOptions.maxSchedules}.
   */
  async put(definition: ScheduleDefinition): Promise<{ schedule: Schedule; created: boolean }> {
    this.#refuseIfClosed();
    const now = this.#clock.now();
    const times = parseCron(definition.cron, definition.timezone, now);
    const schedule = await this.#store.putSchedule(
      definition,
      times.next(now),
      now,
      this.#maxSchedules,
    );
    this.#armAt(schedule.next_at);
    return { schedule, created: schedule.revision === 1 };
  }

  /** A schedule, or `not_found`. */
  async get(name: string): Promise<Schedule> {
    const schedule = await this.#store.getSchedule(name);
    if (schedule === null) throw scheduleNotFound(name);
    return schedule;
  }

  /** A schedule, or null. */
  find(name: string): Promise<Schedule | null> {
    return this.#store.getSchedule(name);
  }

  /** Every schedule, by name. */
  list(): Promise<Schedule[]> {
    return this.#store.listSchedules();
  }

  /** Deletes a schedule (jobs it enqueued stay), or `not_found`. */
  async delete(name: string): Promise<void> {
    this.#refuseIfClosed();
    if (!(await this.#store.deleteSchedule(name))) throw scheduleNotFound(name);
  }

  /**
   * Pauses a schedule (its ticks are skipped until resumed), or resumes it from now: ticks that
   * came due while it was paused are not enqueued. Answers it, or throws `not_found`.
   */
  async setPaused(name: string, paused: boolean): Promise<Schedule> {
    this.#refuseIfClosed();
    const current = await this.get(name);
    const now = this.#clock.now();
    const next = paused ? current.next_at : this.#times(current, now).next(now);
    const schedule = await this.#store.pauseSchedule(name, paused, next, now);
    if (schedule === null) throw scheduleNotFound(name);
    if (!paused) this.#armAt(schedule.next_at);
    return schedule;
  }

  // ---- ticks ----

  /** Runs a pass over due schedules now, or right after the one under way. */
  #wake(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = true;
    this.#idle = this.#run()
      .catch((error) => {
        this.#onError("schedule tick", error);
        this.#armAt(this.#clock.now() + RETRY_MS);
      })
      .finally(() => {
        this.#running = false;
        if (this.#again) {
          this.#again = false;
          this.#wake();
        }
      });
  }

  async #run(): Promise<void> {
    let retry = false;
    for (;;) {
      if (this.#closed) return;
      const now = this.#clock.now();
      const due = await this.#store.dueSchedules(now, DUE_CHUNK);
      for (const schedule of due) {
        if (this.#closed) return;
        if (!(await this.#fire(schedule, now))) retry = true;
      }
      if (due.length < DUE_CHUNK || retry) break;
    }
    const next = await this.#store.nextScheduleAt();
    if (next === null) return;
    // A tick another server holds (or one that failed) is still due: look again shortly, not in
    // a busy loop.
    const now = this.#clock.now();
    this.#armAt(next <= now && retry ? now + RETRY_MS : next);
  }

  /**
   * Enqueues a due schedule's ticks; false if it must be looked at again later (a failure, or a
   * tick taken by another server whose commit may not be visible yet).
   */
  async #fire(schedule: Schedule, now: number): Promise<boolean> {
    let times: CronTimes;
    try {
      times = this.#times(schedule, now);
    } catch (error) {
      // Stored by a version that accepted it: report, and leave the schedule where it is.
      this.#onError(`schedule "${schedule.name}"`, error);
      return false;
    }
    const { ticks, next_at } = dueTicks(schedule, times, now);
    const jobs = ticks.map((at) => tickJob(schedule, at));
    try {
      const out = await this.#broker.enqueue(schedule.queue, jobs, {
        name: schedule.name,
        revision: schedule.revision,
        due_at: schedule.next_at as number,
        last_tick_at: ticks.length === 0 ? null : ticks[ticks.length - 1],
        next_at,
      });
      if (ticks.length > 0) this.#onTicks?.(schedule, ticks, out.map((e) => e.id));
      return true;
    } catch (error) {
      // Another server took the tick, or the schedule changed since it was read: nothing to do
      // but look again (its row may still read as due until the other server commits, so the
      // pass must not re-read it at once).
      if (isTickTaken(error)) return false;
      if (this.#closed && error instanceof TegamiError && error.code === "unavailable") {
        return true;
      }
      this.#onError(`schedule "${schedule.name}"`, error);
      return false;
    }
  }

  #times(schedule: Schedule, now: number): CronTimes {
    return parseCron(schedule.cron, schedule.timezone, now);
  }

  #armAt(at: number | null): void {
    if (!this.#closed && at !== null) this.#timer.armAt(at);
  }

  #refuseIfClosed(): void {
    if (this.#closed) {
      throw new TegamiError("unavailable", "Cannot change schedules: shutting down");
    }
  }
}

/** The `not_found` of an unknown schedule. */
export function scheduleNotFound(name: string): TegamiError {
  return new TegamiError("not_found", `Cannot find schedule "${name}"`);
}
