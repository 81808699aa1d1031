/**
 * A bulk action's window on PostgreSQL ({@linkcode Store.findJobs}): two reads by primary key,
 * then `jobMatches` (core/job_filter.ts) decides which rows match, as on every engine. The payload
 * is read only when the filter looks at it (a CASE not taken never detoasts the column).
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
import type { Sql } from "./pg_driver.ts";

/** Reads one window of `limit` ids past `after` and answers the jobs of it `filter` takes. */
export async function findJobsIn(
  sql: Sql,
  filter: JobFilter,
  after: number,
  limit: number,
): Promise<FoundJobs> {
  const [{ start }] = await sql<{ start: number | null }[]>`
    SELECT min(id) AS start FROM jobs WHERE id > ${after}`;
  if (start === null) return { ids: [], examined: 0, next: null };
  const end = Number(start) + limit - 1;
  const rows = await sql<(FilterRow & { id: number })[]>`
    SELECT id, state, created_at, finished_at, last_error, grp AS "group", key,
      CASE WHEN ${readsPayload(filter)}::boolean THEN payload END AS payload
    FROM jobs WHERE id BETWEEN ${start} AND ${end} AND queue = ${filter.queue} ORDER BY id`;
  const ids = rows.filter((row) => jobMatches(filter, row)).map((row) => Number(row.id));
  return { ids, examined: rows.length, next: end };
}
