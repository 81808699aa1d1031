/**
 * The job browser's page of a queue's pending jobs, by id, read from the claim's own indexes.
 *
 * Pending jobs have no index by id: the job browser's index (`jobs_browse`) leaves pending and
 * leased jobs out, because a job passes through those states on every delivery and each entry
 * made and removed there would be a large share of SQLite's work per job. The claim's indexes hold
 * every pending job in runs sorted by id — one run per priority of the queue's ungrouped jobs
 * (`jobs_pending`: queue, priority, id) and one per group and priority (`jobs_group_pending`) —
 * so a page is the merge of those runs: each run is read past the cursor up to the page's size,
 * and the bound tightens as the page fills, so a later run answers only ids that would make it.
 * A queue with a few priorities costs a few index seeks a page; one with many groups, a seek per
 * group and priority.
 *
 * @module
 */

import type { CountedStatement } from "./counted_statement.ts";
import type { JobPage } from "../store.ts";

/** Prepares a statement. */
type Prepare = (sql: string) => CountedStatement;

/**
 * One kind of run (ungrouped, or one group's): the statements that walk its priorities. Both
 * kinds take the same parameters: ?1 the queue, ?2 the group (read by grouped runs only), ?3 a
 * priority, ?4 and ?5 the open interval of ids, ?6 how many.
 */
interface RunStatements {
  /** The run's highest priority below ?3 (`Infinity` for its highest of all). */
  next: CountedStatement;
  /** Ids of one priority in (lo, hi), ascending. */
  oldest: CountedStatement;
  /** Ids of one priority in (lo, hi), descending. */
  newest: CountedStatement;
}

/** Pages of pending job ids, by id in either order, without an index by id. */
export class PendingPage {
  readonly #ungrouped: RunStatements;
  readonly #grouped: RunStatements;
  readonly #groups: CountedStatement;

  /** Prepares its statements with `prepare`. */
  constructor(prepare: Prepare) {
    const ids = (where: string, order: string) =>
      prepare(
        `SELECT id FROM jobs WHERE ${where} AND priority = ?3 AND id > ?4 AND id < ?5
         ORDER BY id ${order} LIMIT ?6 + 0`,
      );
    const runOf = (where: string): RunStatements => ({
      next: prepare(
        `SELECT priority FROM jobs WHERE ${where} AND priority < ?3
         ORDER BY priority DESC LIMIT 1`,
      ),
      oldest: ids(where, "ASC"),
      newest: ids(where, "DESC"),
    });
    this.#ungrouped = runOf("queue = ?1 AND state = 'pending' AND grp IS NULL");
    this.#grouped = runOf("queue = ?1 AND state = 'pending' AND grp = ?2");
    this.#groups = prepare("SELECT grp FROM job_groups WHERE queue = ? AND pending > 0");
  }

  /** The ids of `queue`'s pending jobs on `page`, in its order. */
  ids(queue: string, page: JobPage): number[] {
    if (page.limit < 1) return [];
    const merge = new Merge(page);
    this.#walk(this.#ungrouped, queue, null, merge);
    for (const row of this.#groups.all(queue) as { grp: string }[]) {
      this.#walk(this.#grouped, queue, row.grp, merge);
    }
    return merge.result();
  }

  /** Reads each priority's run of one kind into `merge`. */
  #walk(run: RunStatements, queue: string, group: string | null, merge: Merge): void {
    const read = merge.oldestFirst ? run.oldest : run.newest;
    let priority = Infinity;
    for (;;) {
      const next = run.next.get(queue, group, priority) as { priority: number } | undefined;
      if (next === undefined) return;
      priority = next.priority;
      merge.add(
        read.all(queue, group, priority, merge.lo, merge.hi, merge.limit) as { id: number }[],
      );
    }
  }
}

/** The best `limit` ids seen so far, and the open interval a further id must fall in. */
class Merge {
  readonly oldestFirst: boolean;
  readonly limit: number;
  lo: number;
  hi: number;
  #ids: number[] = [];

  constructor(page: JobPage) {
    this.oldestFirst = page.order === "oldest";
    this.limit = page.limit;
    this.lo = this.oldestFirst ? (page.after ?? 0) : 0;
    this.hi = this.oldestFirst ? Infinity : (page.after ?? Infinity);
  }

  /** Takes a run's ids; once the page is full, narrows the interval to ids that would make it. */
  add(rows: { id: number }[]): void {
    if (rows.length === 0) return;
    for (const row of rows) this.#ids.push(row.id);
    this.#ids.sort(this.oldestFirst ? (a, b) => a - b : (a, b) => b - a);
    if (this.#ids.length < this.limit) return;
    this.#ids.length = this.limit;
    const worst = this.#ids[this.limit - 1];
    if (this.oldestFirst) this.hi = worst;
    else this.lo = worst;
  }

  /** The page's ids, in its order. */
  result(): number[] {
    return this.#ids;
  }
}
