/**
 * Event-loop lag: how late a timer fires compared with when it was due. A synchronous stall
 * (a long SQLite checkpoint, a huge JSON parse) shows up here as lateness. Measured with one
 * real-time interval, so it works whatever clock the rest of the server is given.
 *
 * @module
 */

/** Samples event-loop lag and reports each sample. */
export class EventLoopLag {
  readonly #intervalMs: number;
  readonly #observe: (lagMs: number) => void;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #due = 0;
  #stopped = true;

  /** Samples every `intervalMs` (default 25 ms) and calls `observe` with the lateness. */
  constructor(observe: (lagMs: number) => void, intervalMs = 25) {
    this.#observe = observe;
    this.#intervalMs = intervalMs;
  }

  /** Starts sampling. The timer does not keep the process alive. */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#arm();
  }

  /** Stops sampling. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #arm(): void {
    this.#due = performance.now() + this.#intervalMs;
    this.#timer = setTimeout(() => {
      this.#observe(Math.max(0, performance.now() - this.#due));
      if (!this.#stopped) this.#arm();
    }, this.#intervalMs);
    Deno.unrefTimer(this.#timer as unknown as number);
  }
}
