/**
 * How the SQLite store leases the jobs of a claim, inside the claim's transaction, once the
 * store has decided how many it may take (its limits, `claimCap`): the plain claim of a queue
 * without groups (one statement), and the grouped claim (candidates in {@linkcode claimOrder},
 * then leased). Either deals the leased jobs round-robin over the claim's wants.
 *
 * @module
 */

import type { Delivery } from "../../core/job.ts";
import { newLeaseToken } from "../../core/lease_token.ts";
import {
  byClaimOrder,
  claimLeaseMs,
  dealRoundRobin,
  type LifecyclePolicy,
} from "../../core/lifecycle.ts";
import { type JobRow, rowToJob } from "../job_row.ts";
import type { ClaimWant } from "../store.ts";
import type { Candidate } from "../claim_order.ts";
import { type CandidateGroup, planGroupedClaim, takenByGroup } from "../group_row.ts";
import type { SqliteGroups } from "./sqlite_groups.ts";
import type { QueueMirror } from "./queue_mirror.ts";
import type { SqliteStatements } from "./sqlite_statements.ts";

/** The claims of one SQLite store. */
export class SqliteClaims {
  readonly #s: SqliteStatements;
  readonly #groups: SqliteGroups;
  readonly #queues: QueueMirror;
  readonly #policy: LifecyclePolicy;
  readonly #leased: (id: number, queue: string) => void;

  /**
   * Claims through `statements` and `groups`, staging each lease in `queues` and telling
   * `leased`.
   */
  constructor(
    statements: SqliteStatements,
    groups: SqliteGroups,
    queues: QueueMirror,
    policy: LifecyclePolicy,
    leased: (id: number, queue: string) => void,
  ) {
    this.#s = statements;
    this.#groups = groups;
    this.#queues = queues;
    this.#policy = policy;
    this.#leased = leased;
  }

  /** The claim of a queue without groups or limits. */
  plain(queue: string, wants: ClaimWant[], total: number, now: number): Delivery[][] {
    const out: Delivery[][] = wants.map(() => []);
    const s = this.#s;
    const wanted = wants[0].lease_ms;
    if (wants.every((want) => want.lease_ms === wanted)) {
      // One statement leases them all; the deal happens after, in claim order.
      // The fast path: a queue without groups, one statement.
      const rows = s.claimAll.all(
        wanted,
        now,
        this.#policy.defaultLeaseMs,
        queue,
        total,
      );
      rows.sort(byClaimOrder);
      this.#deal(queue, rows, wants, out);
      return out;
    }
    // Wants with different lease lengths: each job's length depends on whom it is dealt to.
    const rows = s.selectPending.all(queue, total);
    this.#leaseEach(queue, rows, wants, out, now);
    return out;
  }

  /**
   * Leases `rows` (pending, in claim order) one statement each, dealt round-robin over `wants`
   * with each job's lease length as its want says.
   */
  #leaseEach(
    queue: string,
    rows: JobRow[],
    wants: ClaimWant[],
    out: Delivery[][],
    now: number,
  ): void {
    const dealt = dealRoundRobin(rows.length, wants);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      const w = dealt[i];
      const length = claimLeaseMs(wants[w].lease_ms, row.lease_ms, this.#policy);
      const token = newLeaseToken();
      const expires = now + length;
      this.#s.lease.run(token, length, expires, row.id);
      row.state = "leased";
      row.attempts++;
      row.lease_expires_at = expires;
      this.#queues.move(queue, "pending", "leased");
      this.#leased(row.id, queue);
      out[w].push({ job: rowToJob(row), lease: { token, expires_at: expires } });
    }
  }

  /**
   * The claim of a queue that may hold grouped jobs: the candidates in claim order (see
   * {@linkcode claimOrder}), each group giving no more than its room (core/group_settings.ts),
   * then each leased and the buckets of groups with a rate settled. Runs inside the claim's
   * transaction.
   */
  grouped(queue: string, wants: ClaimWant[], total: number, now: number): Delivery[][] {
    const out: Delivery[][] = wants.map(() => []);
    const limit = this.#queues.settingsOf(queue).group_limit;
    const s = this.#s;
    const summary = this.#groups.summary(queue);
    const most = Math.min(Math.max(limit, summary.most), total);
    const grouped = s.groupCandidates.all(
      queue,
      total,
      limit,
      most,
      now,
    ) as unknown as (Candidate & CandidateGroup)[];
    const front = (s.groupFront.get(queue) as { front: number }).front;
    const ungrouped = s.ungroupedCandidates.all(queue, total) as unknown as Candidate[];
    const { ids, turns, rooms } = planGroupedClaim(grouped, ungrouped, limit, total, front, now);
    if (ids.length === 0) return out;
    const order = new Map(ids.map((id, i) => [id, i]));
    const byOrder = (a: JobRow, b: JobRow) => order.get(a.id)! - order.get(b.id)!;
    const wanted = wants[0].lease_ms;
    let rows: JobRow[];
    if (!wants.every((want) => want.lease_ms === wanted)) {
      rows = s.jobsByIds.all(JSON.stringify(ids)).sort(byOrder);
      this.#leaseEach(queue, rows, wants, out, now);
    } else {
      // One statement leases them all, as on the fast path; the deal follows the claim order.
      rows = s.claimIds.all(wanted, now, this.#policy.defaultLeaseMs, JSON.stringify(ids))
        .sort(byOrder);
      this.#deal(queue, rows, wants, out);
    }
    this.#groups.writeTurns(queue, turns);
    if (summary.rated) {
      this.#groups.writeBuckets(queue, rooms.buckets(takenByGroup(rows), now), now);
    }
    return out;
  }

  /** Deals rows a claim leased, in claim order, round-robin over `wants` into `out`. */
  #deal(queue: string, rows: JobRow[], wants: ClaimWant[], out: Delivery[][]): void {
    const dealt = dealRoundRobin(rows.length, wants);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      this.#queues.move(queue, "pending", "leased");
      this.#leased(row.id, queue);
      out[dealt[i]].push({
        job: rowToJob(row),
        lease: { token: row.lease_token!, expires_at: row.lease_expires_at! },
      });
    }
  }
}
