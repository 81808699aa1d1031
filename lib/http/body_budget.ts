/**
 * The memory budget for request bodies in flight: every body being read holds its bytes against
 * one budget shared by all requests, so the memory clients can pin with slow or stalled uploads
 * is bounded whatever they do. A body that would pass the budget is refused with 503
 * `unavailable` and `Retry-After`; its bytes are given back at once.
 *
 * @module
 */

import { TegamiError } from "../core/errors.ts";

/** A byte budget shared by all bodies being read. */
export class BodyBudget {
  readonly #limit: number;
  #held = 0;

  /** A budget of `limit` bytes. */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Bytes held now. */
  get held(): number {
    return this.#held;
  }

  /** The budget in bytes. */
  get limit(): number {
    return this.#limit;
  }

  /** Takes `bytes`, or throws `unavailable` (nothing taken) when they do not fit. */
  take(bytes: number): void {
    if (this.#held + bytes > this.#limit) {
      throw new TegamiError(
        "unavailable",
        `Cannot read the request body: the server holds ${this.#limit} bytes of bodies at ` +
          "most and is full; retry later",
        { retryAfter: 1 },
      );
    }
    this.#held += bytes;
  }

  /** Gives back `bytes` taken before. */
  give(bytes: number): void {
    this.#held = Math.max(0, this.#held - bytes);
  }
}
