/**
 * Noticing wall-clock jumps. Leases and delays are stored as wall-clock deadlines (they must
 * survive a restart, and a monotonic clock restarts with the process), so a step of the system
 * clock moves every deadline at once: forward, every lease ends together; backward, they last
 * longer. This watch compares how far the wall clock moved with how far the monotonic clock
 * moved between two looks; a difference beyond the threshold is a jump, reported once.
 *
 * @module
 */

/** Options of {@linkcode ClockJumpWatch}. */
export interface ClockJumpOptions {
  /** The wall clock, ms since the epoch (the server's `Clock.now`). */
  wall: () => number;
  /** A monotonic clock, ms. @default performance.now */
  monotonic?: () => number;
  /** The smallest difference reported as a jump, ms. @default 2000 */
  thresholdMs?: number;
  /** Told of each jump: positive when the wall clock leapt forward. */
  onJump: (deltaMs: number) => void;
}

/** Compares the wall clock with a monotonic clock, look by look. */
export class ClockJumpWatch {
  readonly #wall: () => number;
  readonly #monotonic: () => number;
  readonly #threshold: number;
  readonly #onJump: (deltaMs: number) => void;
  #lastWall: number;
  #lastMono: number;
  #timer: ReturnType<typeof setInterval> | undefined;

  /** Takes the first look now. */
  constructor(options: ClockJumpOptions) {
    this.#wall = options.wall;
    this.#monotonic = options.monotonic ?? (() => performance.now());
    this.#threshold = options.thresholdMs ?? 2000;
    this.#onJump = options.onJump;
    this.#lastWall = this.#wall();
    this.#lastMono = this.#monotonic();
  }

  /** Looks again; answers the jump in ms (and reports it) or 0 when the clocks agree. */
  check(): number {
    const wall = this.#wall();
    const mono = this.#monotonic();
    const delta = (wall - this.#lastWall) - (mono - this.#lastMono);
    this.#lastWall = wall;
    this.#lastMono = mono;
    if (Math.abs(delta) < this.#threshold) return 0;
    this.#onJump(Math.round(delta));
    return Math.round(delta);
  }

  /** Looks every `intervalMs` (an unref'd timer: it never keeps the process alive). */
  start(intervalMs = 1000): void {
    this.stop();
    this.#timer = setInterval(() => this.check(), intervalMs);
    Deno.unrefTimer(this.#timer);
  }

  /** Stops looking. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
