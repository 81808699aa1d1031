/**
 * Time, injected. Everything that reads the time or waits goes through a {@linkcode Clock}, so
 * tests move time forward with {@linkcode ManualClock.advance} instead of sleeping.
 *
 * @module
 */

/** A handle returned by {@linkcode Clock.setTimer}. */
export type TimerHandle = number | ReturnType<typeof setTimeout>;

/** The source of time and timers. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Calls `fn` once, `ms` from now. */
  setTimer(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer made by {@linkcode Clock.setTimer}; unknown handles are ignored. */
  clearTimer(handle: TimerHandle): void;
}

/** The real clock: `Date.now()` and the runtime's timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => setTimeout(fn, Math.max(0, ms)),
  clearTimer: (handle) => clearTimeout(handle as number),
};

/**
 * A clock that only moves when told to. Timers fire, in deadline order, during
 * {@linkcode ManualClock.advance}.
 */
export class ManualClock implements Clock {
  #now: number;
  #nextHandle = 1;
  // Handles are plain numbers here; the Map is keyed by them.
  #timers = new Map<TimerHandle, { at: number; fn: () => void }>();

  /** Starts at `start` ms since the epoch. @default 1_700_000_000_000 */
  constructor(start = 1_700_000_000_000) {
    this.#now = start;
  }

  /** The current fake time. */
  now(): number {
    return this.#now;
  }

  /** Schedules `fn` at now + `ms` in fake time. */
  setTimer(fn: () => void, ms: number): TimerHandle {
    const handle = this.#nextHandle++;
    this.#timers.set(handle, { at: this.#now + Math.max(0, ms), fn });
    return handle;
  }

  /** Cancels a fake timer. */
  clearTimer(handle: TimerHandle): void {
    this.#timers.delete(handle);
  }

  /** Moves time forward by `ms`, firing every timer that comes due, earliest first. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let next: [TimerHandle, { at: number; fn: () => void }] | undefined;
      for (const entry of this.#timers) {
        if (entry[1].at <= target && (next === undefined || entry[1].at < next[1].at)) {
          next = entry;
        }
      }
      if (next === undefined) break;
      this.#timers.delete(next[0]);
      this.#now = Math.max(this.#now, next[1].at);
      next[1].fn();
    }
    this.#now = target;
  }

  /** How many timers are waiting. */
  get pendingTimers(): number {
    return this.#timers.size;
  }
}

/** The longest single timer wait; longer deadlines re-arm (keeps setTimeout in range). */
const MAX_TIMER_MS = 60 * 60 * 1000;

/**
 * One timer for the earliest of many deadlines: arming it for a time at or after the one it is
 * armed for changes nothing, an earlier one replaces it. It fires once (at most
 * {@linkcode MAX_TIMER_MS} from when it was armed: the callback looks at the time itself) and is
 * then unarmed.
 */
export class EarliestTimer {
  readonly #clock: Clock;
  readonly #fire: () => void;
  #timer: TimerHandle | null = null;
  #at = Infinity;

  /** A timer on `clock` that calls `fire`. */
  constructor(clock: Clock, fire: () => void) {
    this.#clock = clock;
    this.#fire = fire;
  }

  /** Fires at `at` (ms since the epoch) unless it is armed for an earlier time already. */
  armAt(at: number): void {
    if (at >= this.#at) return;
    this.clear();
    this.#at = at;
    const wait = Math.min(Math.max(0, at - this.#clock.now()), MAX_TIMER_MS);
    this.#timer = this.#clock.setTimer(() => {
      this.#timer = null;
      this.#at = Infinity;
      this.#fire();
    }, wait);
  }

  /** Unarms it. */
  clear(): void {
    if (this.#timer !== null) this.#clock.clearTimer(this.#timer);
    this.#timer = null;
    this.#at = Infinity;
  }
}
