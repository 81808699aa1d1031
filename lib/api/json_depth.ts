/**
 * A guard run before `JSON.parse` on whatever a client sends: text nesting arrays and objects
 * deeper than {@linkcode MAX_JSON_DEPTH} is refused unparsed. V8 parses deep nesting slowly and
 * `JSON.stringify` of it slower still (16 MiB of nested arrays held the event loop for 9 s, and
 * a checkpoint of 4 million levels for 10 s), while no job's payload needs a thousand levels.
 *
 * @module
 */

import { TegamiError } from "../core/errors.ts";

/** The deepest nesting of arrays and objects accepted in a body or a frame. */
export const MAX_JSON_DEPTH = 1000;

/**
 * Whether `text` nests arrays and objects deeper than `max` levels, strings aside. Text of at
 * most `2 × max` characters is not looked at: valid JSON that short cannot nest that deep, and
 * invalid JSON that short costs `JSON.parse` nothing to refuse.
 */
export function nestsDeeperThan(text: string, max: number = MAX_JSON_DEPTH): boolean {
  if (text.length <= 2 * max) return false;
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: to its closing quote, past escaped characters.
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** Throws `invalid_json` naming `what` (the request body, the frame) when `text` nests too deep. */
export function refuseDeepJson(text: string, what: string): void {
  if (nestsDeeperThan(text)) {
    throw new TegamiError(
      "invalid_json",
      `Cannot parse ${what}: it nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
    );
  }
}
