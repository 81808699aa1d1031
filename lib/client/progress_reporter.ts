/**
 * Coalesced progress reports of one job: at most one report is in flight; values reported
 * meanwhile replace each other, and only the latest is sent once the one in flight is answered.
 * A handler may so report in a tight loop and cost the server one write per round trip, not one
 * per call.
 *
 * Each call resolves once a report carrying its value, or a later one, is durably recorded (the
 * server answered `ok`), and rejects with the error of that report (`lease_lost` once the lease
 * is gone, `payload_too_large` over 4 KiB).
 *
 * @module
 */

interface Waiter {
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Sends one job's progress reports, one at a time, the latest value winning. */
export class ProgressReporter {
  readonly #send: (value: unknown) => Promise<unknown>;
  #next: { value: unknown; waiters: Waiter[] } | null = null;
  #busy = false;

  /** Makes a reporter; `send` records one value and resolves once it is durable. */
  constructor(send: (value: unknown) => Promise<unknown>) {
    this.#send = send;
  }

  /** Reports `value` (any JSON value); resolves once it, or a later value, is recorded. */
  report(value: unknown): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.#next === null) this.#next = { value, waiters: [] };
      else this.#next.value = value;
      this.#next.waiters.push({ resolve, reject });
      if (!this.#busy) this.#flush();
    });
  }

  #flush(): void {
    const next = this.#next;
    this.#next = null;
    if (next === null) {
      this.#busy = false;
      return;
    }
    this.#busy = true;
    this.#send(next.value).then(
      () => {
        for (const waiter of next.waiters) waiter.resolve();
      },
      (error) => {
        for (const waiter of next.waiters) waiter.reject(error);
      },
    ).finally(() => this.#flush());
  }
}
