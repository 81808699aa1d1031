/**
 * Per-group settings as both stores keep them (`group_settings`: a row per configured group) and
 * the rate buckets of groups with a rate (`group_buckets`), and what both make of them: the
 * group's state as the API shows it, what a claim may take of a group, and the bucket a claim
 * leaves. The rules are core/group_settings.ts's and core/rate_bucket.ts's; this module only
 * maps rows onto them, once for both engines.
 *
 * @module
 */

import {
  DEFAULT_GROUP_SETTINGS,
  groupHold,
  groupRoom,
  type GroupSettings,
  type GroupState,
  strideOf,
  TURN_UNIT,
} from "../core/group_settings.ts";
import { nextTokenAt } from "../core/rate_bucket.ts";
import { type Candidate, claimOrder, servedTurns } from "./claim_order.ts";
import type { HeldGroup } from "./store.ts";

/** A `group_settings` row's settings columns. */
export interface GroupSettingsRow {
  /** The weight. */
  weight: number;
  /** `TURN_UNIT / weight`, rounded: what the row triggers add to the group's turn per lease. */
  stride: number;
  /** Its own concurrency, or null. */
  concurrency: number | null;
  /** Its rate's limit, or null without a rate. */
  rate_limit: number | null;
  /** Its rate's interval, ms, or null without a rate. */
  rate_per_ms: number | null;
}

/** The columns of {@linkcode GroupSettingsRow}, in the order both stores write them. */
export const GROUP_SETTINGS_COLUMNS = [
  "weight",
  "stride",
  "concurrency",
  "rate_limit",
  "rate_per_ms",
] as const;

/** The row of `settings`. */
export function groupSettingsToRow(settings: Readonly<GroupSettings>): GroupSettingsRow {
  return {
    weight: settings.weight,
    stride: strideOf(settings.weight),
    concurrency: settings.concurrency,
    rate_limit: settings.rate?.limit ?? null,
    rate_per_ms: settings.rate?.per_ms ?? null,
  };
}

/** The settings of a row (the defaults for none). */
export function rowToGroupSettings(row: Partial<GroupSettingsRow> | null): GroupSettings {
  if (row === null || row.weight == null) return { ...DEFAULT_GROUP_SETTINGS };
  return {
    weight: Number(row.weight),
    concurrency: row.concurrency == null ? null : Number(row.concurrency),
    rate: row.rate_limit == null
      ? null
      : { limit: Number(row.rate_limit), per_ms: Number(row.rate_per_ms) },
  };
}

/** What a store reads of one group to show it: its settings row, its counts, its bucket. */
export interface GroupFacts extends Partial<GroupSettingsRow> {
  /** The group's name. */
  grp: string;
  /** Its jobs pending (null: no job row of it). */
  pending: number | null;
  /** Its jobs leased. */
  leased: number | null;
  /** When its rate next gives it a token, if its last claim left it without one. */
  held_until: number | null;
}

/**
 * A group as the API shows it, from what a store read of it, in a queue whose `group_limit` is
 * `groupLimit`, at `now`.
 */
export function groupState(facts: GroupFacts, groupLimit: number, now: number): GroupState {
  const settings = rowToGroupSettings(facts);
  const pending = Number(facts.pending ?? 0);
  const leased = Number(facts.leased ?? 0);
  const limit = settings.concurrency ?? groupLimit;
  const heldUntil = settings.rate === null || facts.held_until == null
    ? null
    : Number(facts.held_until);
  const held = groupHold(pending, leased, limit, heldUntil, now);
  return {
    group: facts.grp,
    settings,
    configured: facts.weight != null,
    pending,
    leased,
    limit,
    held,
    held_until: held === "rate" ? heldUntil : null,
  };
}

/** A held group for the queue's stats, from {@linkcode groupState}; null if it is not held. */
export function heldGroup(state: GroupState): HeldGroup | null {
  if (state.held === null) return null;
  const { group, held, pending, leased, limit } = state;
  return { group, held, pending, leased, limit };
}

/** A claim candidate group as both stores read it: its row, its settings, its bucket. */
export interface CandidateGroup extends Partial<GroupSettingsRow> {
  /** The group's name. */
  grp: string;
  /** Its turn. */
  turn: number;
  /** Its jobs leased. */
  leased: number;
  /** Its bucket's tokens as stored, or null without a bucket row. */
  tokens: number | null;
  /** When they were counted. */
  at: number | null;
}

/** The first row of each group among candidates whose rows come a group together. */
export function* firstOfEach<T extends { grp: string }>(rows: T[]): Iterable<T> {
  for (let i = 0; i < rows.length; i++) {
    if (i === 0 || rows[i - 1].grp !== rows[i].grp) yield rows[i];
  }
}

/**
 * When a queue's held claims may take more: the earlier of when its own rate's next token comes
 * and when the first of its groups held by their rates gets one (either absent: not held).
 */
export function earliest(own: number | undefined, groups: number | undefined): number | null {
  if (groups === undefined) return own ?? null;
  return own === undefined ? groups : Math.min(own, groups);
}

/** A group's bucket as a claim leaves it. */
export interface BucketWrite {
  /** The group's name. */
  grp: string;
  /** Its tokens after the claim. */
  tokens: number;
  /** When the next whole token comes, if fewer than one is left; else null. */
  held_until: number | null;
}

/** What a claim may take of each candidate group, and how to settle their buckets after it. */
export class GroupRooms {
  readonly #rated = new Map<string, { tokens: number; per_ms: number; limit: number }>();
  readonly #rooms = new Map<string, number>();
  readonly #strides = new Map<string, number>();

  /**
   * The rooms of `groups` (each once) in a queue whose `group_limit` is `groupLimit`, for a
   * claim of `total` at `now`.
   */
  constructor(groups: Iterable<CandidateGroup>, groupLimit: number, total: number, now: number) {
    for (const g of groups) {
      this.#strides.set(g.grp, Number(g.stride ?? TURN_UNIT));
      if (g.weight == null) {
        this.#rooms.set(g.grp, Math.min(total, groupLimit - Number(g.leased)));
        continue;
      }
      const settings = rowToGroupSettings(g);
      const bucket = g.tokens === null ? null : { tokens: Number(g.tokens), at: Number(g.at) };
      const { room, tokens } = groupRoom(
        settings,
        groupLimit,
        total,
        Number(g.leased),
        bucket,
        now,
      );
      this.#rooms.set(g.grp, room);
      if (tokens !== null) {
        this.#rated.set(g.grp, { tokens, ...settings.rate! });
      }
    }
  }

  /** How many jobs of `grp` the claim may take. */
  room(grp: string): number {
    return this.#rooms.get(grp) ?? 0;
  }

  /** The stride of `grp`. */
  stride(grp: string): number {
    return this.#strides.get(grp) ?? TURN_UNIT;
  }

  /**
   * The buckets to write after the claim leased `taken` jobs of each group (by name, absent for
   * none), at `now`: those of the groups with a rate that the claim took from or found empty.
   */
  buckets(taken: Map<string, number>, now: number): BucketWrite[] {
    const out: BucketWrite[] = [];
    for (const [grp, r] of this.#rated) {
      const took = taken.get(grp) ?? 0;
      const tokens = r.tokens - took;
      // A bucket the claim neither took from nor found empty is as it was stored.
      if (took === 0 && tokens >= 1) continue;
      const next = nextTokenAt(tokens, r, now);
      out.push({ grp, tokens, held_until: next > now ? next : null });
    }
    return out;
  }
}

/** Orders strings by code point: UTF-8's byte order, which both databases sort group names by. */
export function byCodePoint(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done || y.done) return x.done ? (y.done ? 0 : -1) : 1;
    const d = x.value.codePointAt(0)! - y.value.codePointAt(0)!;
    if (d !== 0) return d;
  }
}

/** What a grouped claim takes, in order, and what it leaves of its groups. */
export interface GroupedPlan {
  /** The ids to lease, in claim order. */
  ids: number[];
  /** The served groups' turns once these are leased (see servedTurns). */
  turns: Map<string, number>;
  /** The candidate groups' rooms, and their buckets to settle (see {@linkcode takenByGroup}). */
  rooms: GroupRooms;
}

/**
 * The plan of a grouped claim of up to `total` jobs at `now`, on the candidates both stores read
 * (`grouped`: a group's rows together, each with its group's row; `ungrouped`), in a queue whose
 * `group_limit` is `groupLimit` and whose front is `front`: each group's room, the claim order,
 * and the turns the served groups move to.
 */
export function planGroupedClaim(
  grouped: (Candidate & CandidateGroup)[],
  ungrouped: Candidate[],
  groupLimit: number,
  total: number,
  front: number,
  now: number,
): GroupedPlan {
  const rooms = new GroupRooms(firstOfEach(grouped), groupLimit, total, now);
  for (const c of grouped) {
    c.room = rooms.room(c.grp);
    c.stride = rooms.stride(c.grp);
  }
  const ids = claimOrder(grouped, ungrouped, total, front);
  return { ids, turns: servedTurns(grouped, ids, front), rooms };
}

/** How many of `rows` (leased jobs) each group has. */
export function takenByGroup(rows: { grp: string | null }[]): Map<string, number> {
  const taken = new Map<string, number>();
  for (const row of rows) if (row.grp !== null) taken.set(row.grp, (taken.get(row.grp) ?? 0) + 1);
  return taken;
}
