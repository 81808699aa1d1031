/**
 * Counts acks sent and answered, so a consumer can say when the acks it has sent so far are
 * answered — also while new jobs keep arriving and being acked (a backlog draining), when the
 * count of outstanding acks may never touch zero.
 *
 * @module
 */

/** Acks of one consumer. */
export class AckTracker {
  #sent = 0;
  #answered = 0;
  #waiters: { until: number; wake: () => void }[] = [];

  /** Notes an ack sent. */
  sent(): void {
    this.#sent++;
  }

  /** Notes an ack answered. */
  answered(): void {
    this.#answered++;
    if (this.#waiters.length === 0) return;
    const still = [];
    for (const waiter of this.#waiters) {
      if (this.#answered >= waiter.until) waiter.wake();
      else still.push(waiter);
    }
    this.#waiters = still;
  }

  /** Resolves once as many acks are answered as had been sent when it was called. */
  settled(): Promise<void> {
    const until = this.#sent;
    if (this.#answered >= until) return Promise.resolve();
    return new Promise((wake) => this.#waiters.push({ until, wake }));
  }
}
