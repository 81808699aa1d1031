/**
 * The claim order under groups, priorities and limits, as docs/api.md writes it down (Order,
 * Groups, Limits): one scenario whose every delivery is written out, so an engine that decides
 * any step differently fails. The rules it follows:
 *
 * - a claim of n jobs looks at the n groups with room served longest ago and at the jobs without
 *   a group; among the jobs they offer, priority first (so turns come before priority across
 *   groups, and priority always comes first within a line);
 * - among equal priorities, rounds: the first job in line of every group with room, then the
 *   second, … (a group's line is its pending jobs by priority, then id, as many as its room;
 *   the jobs without a group are one more line, without a limit);
 * - in a round the job without a group goes first, then the groups, the one served longest ago
 *   first (a group new to the queue counts as served longest ago; ties go by id);
 * - a claim takes the first jobs of that order, no more than the queue's free concurrency and
 *   the whole tokens in its rate's bucket (at most a tenth of the interval's tokens, refilled
 *   evenly); claimFair() deals them round-robin over its wants.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Delivery, NewJob } from "../../../lib/core/job.ts";
import type { Store } from "../../../lib/store/store.ts";
import { newJob, queueSettings, type SuiteCases, T0 } from "./fixtures.ts";

/** Registers the cases of this area. */
export function claimOrderCases({ test }: SuiteCases): void {
  test("claim() and claimFair() deliver in the documented order under groups, priorities, a concurrency and a rate", async (store) => {
    // group_limit 2; at most 5 leased; 40 per second: one token every 25 ms, at most 4 held.
    await store.putSettings(
      "q",
      queueSettings({ group_limit: 2, concurrency: 5, rate: { limit: 40, per_ms: 1_000 } }),
      T0,
    );
    const jobs = new Jobs(store);
    // Ids in this order. Lines (priority, then id): A a3 a1 a2 a4, B b2 b1 b3, C c1 c2, D d1,
    // ungrouped u2 u1 u3 u4.
    await jobs.enqueue(0, [
      ["a1", "A", 0],
      ["a2", "A", 0],
      ["a3", "A", 5],
      ["a4", "A", 0],
      ["b1", "B", 0],
      ["b2", "B", 5],
      ["c1", "C", 0],
      ["u1", null, 0],
      ["u2", null, 5],
      ["u3", null, 0],
      ["d1", "D", 0],
      ["c2", "C", 0],
      ["u4", null, -1],
      ["b3", "B", -1],
    ]);

    // A full bucket: 4 tokens. Priority 5, round 1: u2 (ungrouped first), then a3 and b2 (no
    // group served yet: by id). Priority 0, round 1: c1, d1 (u1, a1 and b1 are second in their
    // lines). A, B and C were served in that order.
    await jobs.claim(0, 10, "u2 a3 b2 c1");
    // 1 token, 4 leased: one. Priority 0, round 1: u1, the ungrouped job, first.
    await jobs.claim(25, 10, "u1");
    // 3 tokens, but 5 leased: the concurrency holds everything back.
    await jobs.claim(100, 10, "-");
    await jobs.ack(100, ["u2", "a3"]);
    // 3 tokens, 3 leased: two, dealt one to each want. Round 1: u3, then d1 (D never served)
    // before a1 (A served before B and C).
    await jobs.claimFair(100, [1, 3], "u3 | d1");
    await jobs.ack(150, ["b2", "c1", "u1"]);
    // 3 tokens, 2 leased: three. Round 1: A, B and C in the order they were served.
    await jobs.claim(150, 10, "a1 b1 c2");
    await jobs.enqueue(150, [["a5", "A", 9], ["e1", "E", 0]]);
    await jobs.ack(200, ["u3", "d1", "a1", "b1"]);
    // 2 tokens, 1 leased: two. a5 by its priority, though A was served recently; then e1, new,
    // in round 1 before a2, second in A's line.
    await jobs.claimFair(200, [2, 2, 2], "a5 | e1 | -");
    // 4 tokens, 3 leased: two. A has room for one: a2. Priority −1, round 1: u4, then b3.
    await jobs.claimFair(300, [2, 2, 2], "a2 | u4 | -");
    await jobs.ack(300, ["c2"]);
    // 4 tokens, 4 leased: one. A is at its group_limit (a5, a2), so b3 (priority −1) goes
    // before a4 (priority 0).
    await jobs.claim(400, 10, "b3");
    await jobs.ack(400, ["a5"]);
    // 3 tokens, 4 leased: one, and A has room again.
    await jobs.claim(400, 10, "a4");
  });

  test("a claim of one job takes the group whose turn it is before a higher priority elsewhere", async (store) => {
    await store.putSettings("q", queueSettings({ group_limit: 2 }), T0);
    const jobs = new Jobs(store);
    await jobs.enqueue(0, [["a1", "A", 0]]);
    await jobs.claim(0, 1, "a1");
    // A was served; B and C were not. a2's priority does not take A's turn back.
    await jobs.enqueue(10, [["b1", "B", 0], ["a2", "A", 9], ["c1", "C", 0]]);
    await jobs.claim(20, 1, "b1");
    await jobs.claim(30, 1, "c1");
    await jobs.claim(40, 1, "a2");
    // Within a line priority comes first: a3 (priority 5) before a4, enqueued earlier.
    await jobs.enqueue(50, [["a4", "A", 0], ["a3", "A", 5]]);
    await jobs.ack(60, ["a1", "a2"]);
    await jobs.claim(70, 1, "a3");
  });
}

/** Longer than the scenario: no lease ends but by an ack. */
const LEASE_MS = 600_000;

/** The scenario's jobs by name, and what each claim delivered. */
class Jobs {
  /** One line per claim: when, then each want's deliveries by name ("-" for none). */
  readonly log: string[] = [];
  /** The lines the claims so far should have logged. */
  readonly expected: string[] = [];
  readonly #names = new Map<number, string>();
  readonly #leases = new Map<string, { id: number; token: string }>();

  constructor(readonly store: Store) {}

  /** Enqueues `[name, group, priority]` jobs at T0 + `at`, in order. */
  async enqueue(at: number, jobs: [string, string | null, number][]): Promise<void> {
    const now = T0 + at;
    const fields = jobs.map(([, group, priority]): NewJob =>
      newJob({ group, priority, run_at: now })
    );
    const out = await this.store.enqueue("q", fields, now);
    out.forEach((e, i) => this.#names.set(e.id, jobs[i][0]));
  }

  /** claim() of "q" at T0 + `at`, at most `max`: asserts it delivered `expected`. */
  async claim(at: number, max: number, expected: string): Promise<void> {
    this.#check(at, [await this.store.claim("q", max, LEASE_MS, T0 + at)], expected);
  }

  /**
   * claimFair() of "q" at T0 + `at` with one want of each max: asserts it delivered `expected`
   * (each want's deliveries, split by "|").
   */
  async claimFair(at: number, maxes: number[], expected: string): Promise<void> {
    // Each want its own lease length: the claim then leases job by job, in the same order.
    const wants = maxes.map((max, i) => ({ max, lease_ms: LEASE_MS + i * 1_000 }));
    this.#check(at, await this.store.claimFair("q", wants, T0 + at), expected);
  }

  /** Logs what a claim delivered, and asserts the whole log so far is the one expected. */
  #check(at: number, got: Delivery[][], expected: string): void {
    const names = got.map((deliveries) =>
      deliveries.map((d) => {
        const name = this.#names.get(d.job.id) ?? `#${d.job.id}`;
        this.#leases.set(name, { id: d.job.id, token: d.lease.token });
        return name;
      })
    );
    this.log.push(`@${at} ${names.map((n) => n.join(" ") || "-").join(" | ")}`);
    this.expected.push(`@${at} ${expected}`);
    assert.deepEqual(this.log, this.expected);
  }

  /** Acks the named jobs' leases at T0 + `at`. */
  async ack(at: number, names: string[]): Promise<void> {
    for (const name of names) {
      const lease = this.#leases.get(name);
      assert.ok(lease !== undefined, `${name} was never delivered: ${this.log.join(", ")}`);
      await this.store.ack(lease.id, lease.token, null, T0 + at);
    }
  }
}
