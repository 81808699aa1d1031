/**
 * Coalescing: writes of one kind that arrive together (acks, plain enqueues) become one SQL
 * statement in the next group-committed transaction, instead of one statement each. A burst
 * of 100 acks then costs one round trip and one COMMIT.
 *
 * A {@linkcode Coalescer} collects items until its operation runs in a batch: everything added
 * before that moment rides along, anything later waits for the next operation. Each item gets
 * its own answer — a value, or the `TegamiError` the statement found for it — once the
 * transaction has committed.
 *
 * @module
 */

import { TegamiError } from "../../core/errors.ts";
import type { BatchNews, PgOperation } from "./pg_group_commit.ts";
import type { TxSql } from "./pg_driver.ts";

interface Waiting<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

/** Runs many items of one kind as one statement; answers one value or error per item. */
export type CoalescedRun<I, O> = (
  tx: TxSql,
  news: BatchNews,
  items: I[],
) => Promise<(O | TegamiError)[]>;

/** Gathers items of one kind into shared statements. */
export class Coalescer<I, O> {
  readonly #submit: <T>(operation: PgOperation<T>, weight: () => number) => Promise<T>;
  readonly #run: CoalescedRun<I, O>;
  #waiting: Waiting<I, O>[] = [];

  /**
   * `submit` queues an operation in the group commit (as one statement, pipelined, counted
   * as the items it carries); `run` writes a list of items with one statement.
   */
  constructor(
    submit: <T>(operation: PgOperation<T>, weight: () => number) => Promise<T>,
    run: CoalescedRun<I, O>,
  ) {
    this.#submit = submit;
    this.#run = run;
  }

  /** Adds an item to the next shared statement; resolves after its transaction commits. */
  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      if (this.#waiting.length === 1) this.#start();
    });
  }

  #start(): void {
    // The items are taken when the operation first runs; a batch run again (after a deadlock)
    // runs the same items again, and items added meanwhile start an operation of their own.
    let taken: Waiting<I, O>[] | null = null;
    const take = () => {
      if (taken === null) {
        taken = this.#waiting;
        this.#waiting = [];
      }
      return taken;
    };
    this.#submit(
      (tx, news) => this.#run(tx, news, take().map((w) => w.item)),
      () => take().length,
    ).then(
      (answers) => {
        const waiting = take();
        for (let i = 0; i < waiting.length; i++) {
          const answer = answers[i];
          if (answer instanceof TegamiError) waiting[i].reject(answer);
          else waiting[i].resolve(answer);
        }
      },
      (error) => {
        for (const waiting of take()) waiting.reject(error);
      },
    );
  }
}
