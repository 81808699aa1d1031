/**
 * A bulk action's window on SQLite ({@linkcode Store.findJobs}): the statements read the rows,
 * `jobMatches` (core/job_filter.ts) decides which match.
 *
 * @module
 */

import {
  type FilterRow,
  type FoundJobs,
  type JobFilter,
  jobMatches,
  readsPayload,
} from "../../core/job_filter.ts";
import type { CountedStatement } from "./counted_statement.ts";

/** The statements a window needs (prepared in sqlite_statements.ts). */
export interface FindStatements {
  /** `min(id)` above a cursor. */
  findStart: CountedStatement;
  /** A queue's rows between two ids. */
  findWindow: CountedStatement;
}

/** Reads one window of `limit` ids past `after` and answers the jobs of it `filter` takes. */
export function findJobsIn(
  s: FindStatements,
  filter: JobFilter,
  after: number,
  limit: number,
): FoundJobs {
  const start = (s.findStart.get(after) as { id: number | null } | undefined)?.id ?? null;
  if (start === null) return { ids: [], examined: 0, next: null };
  const end = start + limit - 1;
  const payload = readsPayload(filter) ? 1 : 0;
  const rows = s.findWindow.all(start, end, filter.queue, payload) as unknown as (FilterRow & {
    id: number;
  })[];
  const ids = rows.filter((row) => jobMatches(filter, row)).map((row) => row.id);
  return { ids, examined: rows.length, next: end };
}
