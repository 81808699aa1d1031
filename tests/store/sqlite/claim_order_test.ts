/**
 * The SQLite store's claim order for a queue with groups (claimOrder), on candidates as its two
 * statements return them: by priority first; among equal priorities in rounds (every group's
 * first job, then the second...); within a round the ungrouped jobs first, then the groups
 * served longest ago; a group offers no more than its room.
 */

import assert from "node:assert/strict";
import { claimOrder } from "../../../lib/store/sqlite/claim_order.ts";

const g = (id: number, grp: string, turn: number, room: number, priority = 0) => ({
  id,
  priority,
  grp,
  turn,
  room,
});
const u = (id: number, priority = 0) => ({ id, priority });

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
