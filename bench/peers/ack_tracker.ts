/**
 * Counts acks sent and answered, so a consumer can say when all of them are settled.
 *
 * @module
 */

/** Outstanding acks of one consumer. */
export class AckTracker {
  #outstanding = 0;
  #waiters: (() => void)[] = [];

  /** Notes an ack sent. */
  sent(): void {
    this.#outstanding++;
  }

  /** Notes an ack answered. */
  answered(): void {
    this.#outstanding--;
    if (this.#outstanding <= 0) {
      this.#outstanding = 0;
      for (const wake of this.#waiters.splice(0)) wake();
    }
  }

  /** Resolves once no ack is outstanding. */
  settled(): Promise<void> {
    if (this.#outstanding === 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}
