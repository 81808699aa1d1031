/**
 * The claim order of a queue with groups, decided here for both stores on the candidates their
 * grouped claims read: each group with room offers its next jobs, and the groups take turns by
 * weight (see docs/api.md, "Groups" and "Fair shares"). The store suite's claim order cases hold
 * both engines to it.
 *
 * Each group's row keeps a `turn`: every lease of one of its jobs moves it on by the group's
 * stride (`TURN_UNIT / weight`, core/group_settings.ts), from no lower than the queue's front
 * (its largest turn) less one unit, so that a group away for a while comes back at the current
 * round rather than with credit for its absence. Both stores' grouped claims write the turns
 * {@linkcode servedTurns} answers, in the claim's transaction.
 *
 * @module
 */

import { TURN_UNIT } from "../core/group_settings.ts";

/** A claim candidate: a pending job's id and what orders it (see {@linkcode claimOrder}). */
export interface Candidate {
  /** The job's id. */
  id: number;
  /** The job's priority (higher first). */
  priority: number;
  /** Its group; absent for an ungrouped job. */
  grp?: string;
  /** Its group's turn (0: never served); absent for an ungrouped job. */
  turn?: number;
  /** Its group's stride (`TURN_UNIT / weight`); absent for an ungrouped job. */
  stride?: number;
  /** How many more of its group this claim may lease; absent for an ungrouped job. */
  room?: number;
}

/**
 * The claim order of a queue with groups, the first `total` ids of it. `grouped`: each group's
 * first pending jobs, a group's rows together, within a group by priority then id;
 * `ungrouped`: the ungrouped jobs by priority then id; `front`: the largest turn of the queue's
 * groups (0 without any). A group offers as many jobs as its room.
 *
 * Candidates are taken by priority first. Among equal priorities, the `k`-th job of a group
 * counts as served at `max(turn, front - TURN_UNIT) + (k - 1) × stride`, and the lowest goes
 * first: with every weight 1 these are rounds (the first job of every group, then the second,
 * ...), and a group of weight 3 gives three jobs a round. The ungrouped jobs count as one more
 * group of weight 1 without a limit, at the front of every round. Ties go by the job's place in
 * its line, then the group served longest ago, then the id. So a hot group's backlog waits its
 * turn behind a group with one job.
 */
export function claimOrder(
  grouped: Candidate[],
  ungrouped: Candidate[],
  total: number,
  front: number,
): number[] {
  const base = front - TURN_UNIT;
  const ranked: { id: number; priority: number; at: number; rank: number; turn: number }[] = [];
  for (let i = 0; i < ungrouped.length; i++) {
    const c = ungrouped[i];
    ranked.push({ id: c.id, priority: c.priority, at: base + i * TURN_UNIT, rank: i, turn: -1 });
  }
  let rank = 0;
  for (let i = 0; i < grouped.length; i++) {
    const c = grouped[i];
    rank = i > 0 && grouped[i - 1].grp === c.grp ? rank + 1 : 0;
    if (rank >= c.room!) continue;
    const at = Math.max(c.turn!, base) + rank * c.stride!;
    ranked.push({ id: c.id, priority: c.priority, at, rank, turn: c.turn! });
  }
  ranked.sort((a, b) =>
    b.priority - a.priority || a.at - b.at || a.rank - b.rank || a.turn - b.turn || a.id - b.id
  );
  return ranked.slice(0, total).map((c) => c.id);
}

/**
 * The turns of the groups a claim served, by name: each group's turn moved on by its stride for
 * each of its `candidates` among the `claimed` ids, from no lower than `front - TURN_UNIT`.
 */
export function servedTurns(
  candidates: Candidate[],
  claimed: number[],
  front: number,
): Map<string, number> {
  const taken = new Set(claimed);
  const turns = new Map<string, number>();
  const base = front - TURN_UNIT;
  for (const c of candidates) {
    if (c.grp === undefined || !taken.has(c.id)) continue;
    const turn = turns.get(c.grp) ?? Math.max(c.turn!, base);
    turns.set(c.grp, turn + c.stride!);
  }
  return turns;
}
