/**
 * An ordering group's own settings (fair shares): its `weight` among the queue's groups, its own
 * `concurrency` (overriding the queue's `group_limit` for this group) and its own `rate`. A group
 * without settings has weight 1, the queue's `group_limit` and no rate.
 *
 * Groups take turns by their `turn` (see docs/api.md, "Fair shares"): each lease of a group's job
 * moves its turn on by its stride, `TURN_UNIT / weight`, so a group of weight 3 is served three
 * times for each time a group of weight 1 is; a claim takes the groups whose turn is lowest, and
 * in one claim the `k`-th job of a group counts as served at `turn + (k - 1) × stride`. Both
 * stores keep the turns in their group rows; the order of one claim is decided by
 * {@linkcode claimOrder} in lib/store/claim_order.ts for both.
 *
 * Pure: parsing with errors naming the field, the JSON view, the stride, and what a group may
 * take in a claim now.
 *
 * @module
 */

import { invalid } from "./errors.ts";
import { MAX_GROUP_BYTES } from "./limits.ts";
import {
  formatRate,
  isObject,
  MAX_CONCURRENCY,
  optionalInteger,
  parseRate,
  type Rate,
} from "./queue_settings.ts";
import { type Bucket, claimCap } from "./rate_bucket.ts";

/** One group's settings; null means "not set" (the queue's `group_limit`, no rate). */
export interface GroupSettings {
  /** Its share of turns against the queue's other groups (1 by default). */
  weight: number;
  /** Most of its jobs leased at once; null: the queue's `group_limit`. */
  concurrency: number | null;
  /** Most deliveries of its jobs per interval; null: no limit of its own. */
  rate: Rate | null;
}

/** The settings of a group nobody configured. */
export const DEFAULT_GROUP_SETTINGS: Readonly<GroupSettings> = Object.freeze({
  weight: 1,
  concurrency: null,
  rate: null,
});

/** The smallest weight. */
export const MIN_WEIGHT = 0.01;
/** The largest weight. */
export const MAX_WEIGHT = 1000;
/** How far one lease moves the turn of a group of weight 1. */
export const TURN_UNIT = 1_000_000;
/** The most groups with settings one page of a listing returns. */
export const MAX_GROUP_PAGE = 1000;

/** How far one lease moves the turn of a group of `weight`: `TURN_UNIT / weight`, rounded. */
export function strideOf(weight: number): number {
  return Math.max(1, Math.round(TURN_UNIT / weight));
}

/** Whether `settings` are the defaults (a group with these has nothing to keep). */
export function isDefaultGroupSettings(settings: Readonly<GroupSettings>): boolean {
  return settings.weight === 1 && settings.concurrency === null && settings.rate === null;
}

const FIELDS = new Set(["weight", "concurrency", "rate"]);

/**
 * Parses and validates a complete group settings object (the body of a group settings PUT):
 * every member optional, absent or null meaning its default; unknown members are refused.
 * Throws `validation_failed` naming the field.
 */
export function parseGroupSettings(value: unknown): GroupSettings {
  if (!isObject(value)) throw invalid("body", "expected a JSON object of group settings");
  for (const name of Object.keys(value)) {
    if (!FIELDS.has(name)) throw invalid(name, "unknown field");
  }
  let weight = 1;
  if (value.weight !== undefined && value.weight !== null) {
    if (typeof value.weight !== "number" || !Number.isFinite(value.weight)) {
      throw invalid("weight", "expected a number or null");
    }
    if (value.weight < MIN_WEIGHT || value.weight > MAX_WEIGHT) {
      throw invalid("weight", `expected a number from ${MIN_WEIGHT} to ${MAX_WEIGHT}`);
    }
    weight = value.weight;
  }
  return {
    weight,
    concurrency: optionalInteger(value, "concurrency", 1, MAX_CONCURRENCY),
    rate: value.rate === undefined || value.rate === null ? null : parseRate(value.rate),
  };
}

/**
 * Checks a group name given apart from a job (a path segment): 1 to 512 bytes of UTF-8 and no
 * NUL, which a job's `group` cannot hold either (SQLite would read the name back cut at it, and
 * PostgreSQL refuses it), so no group could be the one named.
 */
export function checkGroupName(group: string): void {
  const bytes = new TextEncoder().encode(group).length;
  if (bytes < 1 || bytes > MAX_GROUP_BYTES) {
    throw invalid("group", `expected 1 to ${MAX_GROUP_BYTES} bytes of UTF-8, got ${bytes}`);
  }
  if (group.includes("\u0000")) throw invalid("group", "expected no NUL (U+0000) characters");
}

/** The settings as the API shows them: every member, the rate as its canonical text. */
export function groupSettingsView(settings: Readonly<GroupSettings>): Record<string, unknown> {
  return {
    weight: settings.weight,
    concurrency: settings.concurrency,
    rate: settings.rate === null ? null : formatRate(settings.rate),
  };
}

/** What holds a group's pending jobs back: its slots, its rate, or nothing. */
export type GroupHold = "concurrency" | "rate" | null;

/** A group as the API shows it: its settings, its jobs, and what holds it back now. */
export interface GroupState {
  /** The group's name. */
  group: string;
  /** Its settings (the defaults when it has none). */
  settings: GroupSettings;
  /** Whether it has settings of its own. */
  configured: boolean;
  /** Its jobs pending now. */
  pending: number;
  /** Its jobs leased now. */
  leased: number;
  /** Most of its jobs leased at once: its `concurrency`, else the queue's `group_limit`. */
  limit: number;
  /** Why its pending jobs wait: `concurrency` (no slot), `rate` (no token); null otherwise. */
  held: GroupHold;
  /** When held by its rate, when its next token comes; null otherwise. */
  held_until: number | null;
}

/** What a claim may take of one group now, and how its bucket stands. */
export interface GroupRoom {
  /** The most of its jobs the claim may lease (0 or less: none). */
  room: number;
  /** Its bucket's tokens now (store `tokens - taken` after the claim), or null without a rate. */
  tokens: number | null;
  /** When the bucket next holds a whole token, if the rate holds it back; else null. */
  heldUntil: number | null;
}

/**
 * What a claim that wants `total` jobs may take of a group with `settings` in a queue whose
 * `group_limit` is `groupLimit`, `leased` of its jobs leased and its bucket as stored (null:
 * never used): its free slots and its bucket's whole tokens, whichever is fewer.
 */
export function groupRoom(
  settings: Readonly<GroupSettings>,
  groupLimit: number,
  total: number,
  leased: number,
  bucket: Bucket | null,
  now: number,
): GroupRoom {
  const limits = { concurrency: settings.concurrency ?? groupLimit, rate: settings.rate };
  const { cap, tokens, heldUntil } = claimCap(limits, total, leased, bucket, now);
  return { room: cap, tokens, heldUntil };
}

/**
 * Why a group's pending jobs wait now, if they do: `concurrency` when as many of its jobs are
 * leased as its limit allows, `rate` when its bucket (as stored: `heldUntil`, when the next token
 * comes) has no whole token at `now`.
 */
export function groupHold(
  pending: number,
  leased: number,
  limit: number,
  heldUntil: number | null,
  now: number,
): GroupHold {
  if (pending === 0) return null;
  if (leased >= limit) return "concurrency";
  if (heldUntil !== null && heldUntil > now) return "rate";
  return null;
}
