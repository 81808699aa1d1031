/**
 * The nesting guard run before `JSON.parse` on bodies and frames: deep text is refused unparsed,
 * brackets inside strings do not count, and short text is not looked at.
 */

import assert from "node:assert/strict";
import { costlyJson, MAX_JSON_CONTAINERS, MAX_JSON_DEPTH } from "../../lib/api/json_depth.ts";

/** Whether `text` nests deeper than `max` levels, however many arrays and objects it holds. */
const nestsDeeperThan = (text: string, max = MAX_JSON_DEPTH) =>
  costlyJson(text, max, Infinity) !== null;

const nested = (depth: number, inner = "1") => "[".repeat(depth) + inner + "]".repeat(depth);

Deno.test("nestsDeeperThan counts arrays and objects, up to the limit and past it", () => {
  assert.equal(nestsDeeperThan(nested(MAX_JSON_DEPTH)), false);
  assert.equal(nestsDeeperThan(nested(MAX_JSON_DEPTH + 1)), true);
  const objects = '{"a":'.repeat(MAX_JSON_DEPTH + 1) + "1" + "}".repeat(MAX_JSON_DEPTH + 1);
  assert.equal(nestsDeeperThan(objects), true);
  // Unclosed (JSON.parse would refuse it, but only after reading it all): as deep as it goes.
  assert.equal(nestsDeeperThan("[".repeat(3 * MAX_JSON_DEPTH)), true);
});

Deno.test("nestsDeeperThan skips strings, escaped quotes included, and siblings do not add up", () => {
  const inString = JSON.stringify({ s: "[".repeat(5000) + '\\"' + "{".repeat(5000) });
  assert.equal(nestsDeeperThan(inString), false);
  const siblings = "[" + Array(3000).fill("[[1]]").join(",") + "]";
  assert.equal(nestsDeeperThan(siblings), false);
  const afterEscape = JSON.stringify(["\\", "x".repeat(3000)]) + "[[";
  assert.equal(nestsDeeperThan(afterEscape, 2), false);
});

Deno.test("nestsDeeperThan leaves text of at most twice the limit alone", () => {
  assert.equal(nestsDeeperThan("[".repeat(2000), 1000), false);
  assert.equal(nestsDeeperThan("[".repeat(2001), 1000), true);
});

Deno.test("costlyJson counts arrays and objects however shallow, strings aside", () => {
  const wide = (n: number) => "[" + Array(n).fill("[]").join(",") + "]";
  assert.equal(costlyJson(wide(999), 1000, 1000), null);
  assert.match(costlyJson(wide(1000), 1000, 1000) ?? "", /more than 1000 arrays and objects/);
  assert.equal(costlyJson(JSON.stringify(["[]".repeat(5000)]), 1000, 10), null);
  assert.match(costlyJson(wide(MAX_JSON_CONTAINERS)) ?? "", /more than 1000000/);
});
