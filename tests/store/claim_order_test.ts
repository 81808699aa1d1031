/**
 * The claim order of a queue with groups (claimOrder), on candidates as the stores' grouped
 * claims read them: by priority first; among equal priorities in rounds (every group's first
 * job, then the second...), a group of weight w giving w jobs a round; within a round the
 * ungrouped jobs first, then the groups served longest ago; a group offers no more than its room.
 */

import assert from "node:assert/strict";
import { type Candidate, claimOrder as order } from "../../lib/store/claim_order.ts";
import { strideOf, TURN_UNIT } from "../../lib/core/group_settings.ts";

const g = (id: number, grp: string, turn: number, room: number, priority = 0, weight = 1) => ({
  id,
  priority,
  grp,
  turn,
  room,
  stride: strideOf(weight),
});
const u = (id: number, priority = 0) => ({ id, priority });

/** The order with the queue's front at the candidates' largest turn. */
function claimOrder(grouped: Candidate[], ungrouped: Candidate[], total: number): number[] {
  return order(grouped, ungrouped, total, Math.max(0, ...grouped.map((c) => c.turn!)));
}

Deno.test("claimOrder takes one job of each group per round, longest-waiting group first", () => {
  // Group a (turn 5) has three pending, b (turn 2) one, room 3 each.
  const grouped = [g(20, "b", 2, 3), g(10, "a", 5, 3), g(11, "a", 5, 3), g(12, "a", 5, 3)];
  assert.deepEqual(claimOrder(grouped, [], 10), [20, 10, 11, 12]);
});

Deno.test("claimOrder puts the ungrouped jobs first within a round and honours priority first", () => {
  // Group a's rows by priority then id, as the statement returns them: 11 (priority 9), 10.
  const grouped = [g(11, "a", 1, 2, 9), g(10, "a", 1, 2)];
  const ungrouped = [u(30), u(31)];
  // 11 first of all; among priority 0, round 1 is ungrouped 30 (10 is a's second job), round 2
  // ungrouped 31, then a's 10.
  assert.deepEqual(claimOrder(grouped, ungrouped, 10), [11, 30, 31, 10]);
});

Deno.test("claimOrder offers no more of a group than its room, and stops at the total", () => {
  const grouped = [g(10, "a", 1, 1), g(11, "a", 1, 1), g(20, "b", 2, 2), g(21, "b", 2, 2)];
  assert.deepEqual(claimOrder(grouped, [], 10), [10, 20, 21]);
  assert.deepEqual(claimOrder(grouped, [], 2), [10, 20]);
});

Deno.test("claimOrder tells groups of equal turn apart by name and orders their round by id", () => {
  // New groups all start at turn 0: c's rows come first (by name) but 5 is older than 7.
  const grouped = [g(7, "c", 0, 2), g(8, "c", 0, 2), g(5, "d", 0, 2), g(6, "d", 0, 2)];
  assert.deepEqual(claimOrder(grouped, [], 10), [5, 7, 6, 8]);
});

Deno.test("claimOrder gives a group of weight 3 three jobs for each one of a group of weight 1", () => {
  // Both at the front; a (weight 3) rows 10..15, b (weight 1) rows 20..22.
  const t = 5 * TURN_UNIT;
  const grouped = [
    ...[10, 11, 12, 13, 14, 15].map((id) => g(id, "a", t, 10, 0, 3)),
    ...[20, 21, 22].map((id) => g(id, "b", t, 10, 0, 1)),
  ];
  // a's jobs count as served at t, t+1/3, t+2/3, t+3/3 (a stride rounded down: just before
  // t+1), ...; b's at t, t+1, t+2: a10 and b20 tie at t (by id), then a11, a12, a13, then b21.
  assert.deepEqual(claimOrder(grouped, [], 8), [10, 20, 11, 12, 13, 21, 14, 15]);
});

Deno.test("claimOrder brings a group back from far behind at the current round, not with credit", () => {
  // a was served long ago (turn 1), b is at the front: a gets one job a round like b.
  const front = 100 * TURN_UNIT;
  const grouped = [g(10, "a", 1, 5), g(11, "a", 1, 5), g(20, "b", front, 5), g(21, "b", front, 5)];
  assert.deepEqual(order(grouped, [], 10, front), [10, 20, 11, 21]);
});

Deno.test("PostgreSQL's fair-shares migration counts turns in the unit of claimOrder", async () => {
  const sql = await Deno.readTextFile(
    new URL("../../lib/store/postgres/migrations/014_group_settings.sql", import.meta.url),
  );
  const units = [...sql.matchAll(/\b(\d{6,})\b/g)].map((m) => Number(m[1]));
  assert.ok(units.length >= 2);
  assert.ok(units.every((unit) => unit === TURN_UNIT), `${units} against ${TURN_UNIT}`);
});
