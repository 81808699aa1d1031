/**
 * The SQLite store's claim order for a queue with groups, on the candidates its grouped claim
 * reads: rounds in which each group with room offers its next job (see docs/api.md, "Groups").
 * PostgreSQL computes the same order in its grouped claim statement; the store suite's claim
 * order cases hold both to it.
 *
 * @module
 */

/** A claim candidate: a pending job's id and what orders it (see {@linkcode claimOrder}). */
export interface Candidate {
  /** The job's id. */
  id: number;
  /** The job's priority (higher first). */
  priority: number;
  /** Its group; absent for an ungrouped job. */
  grp?: string;
  /** Its group's turn (larger = served more recently); absent for an ungrouped job. */
  turn?: number;
  /** How many more of its group may be leased; absent for an ungrouped job. */
  room?: number;
}

/**
 * The claim order of a queue with groups, the first `total` ids of it. `grouped`: each group's
 * first pending jobs, a group's rows together, within a group by priority then id;
 * `ungrouped`: the ungrouped jobs by priority then id. A group offers as many jobs as its room;
 * the ungrouped jobs count as one more group without a limit, served first among equals.
 * Candidates are taken by priority first; among equal priorities in rounds (the first job of
 * every group, then the second, ...), and within a round the group served longest ago first. So
 * a hot group's backlog waits its turn behind a group with one job.
 */
export function claimOrder(grouped: Candidate[], ungrouped: Candidate[], total: number): number[] {
  const ranked: { id: number; priority: number; rank: number; turn: number }[] = [];
  for (let i = 0; i < ungrouped.length; i++) {
    ranked.push({ id: ungrouped[i].id, priority: ungrouped[i].priority, rank: i + 1, turn: -1 });
  }
  let rank = 0;
  for (let i = 0; i < grouped.length; i++) {
    const c = grouped[i];
    rank = i > 0 && grouped[i - 1].grp === c.grp ? rank + 1 : 1;
    if (rank <= c.room!) ranked.push({ id: c.id, priority: c.priority, rank, turn: c.turn! });
  }
  ranked.sort((a, b) =>
    b.priority - a.priority || a.rank - b.rank || a.turn - b.turn || a.id - b.id
  );
  return ranked.slice(0, total).map((c) => c.id);
}
