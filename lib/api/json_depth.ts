/**
 * A guard run before `JSON.parse` on whatever a client sends: text nesting arrays and objects
 * deeper than {@linkcode MAX_JSON_DEPTH}, or holding more than {@linkcode MAX_JSON_CONTAINERS} of
 * them, is refused unparsed. V8 parses deep nesting slowly and `JSON.stringify` of it slower still
 * (a body of nested arrays within the size limit holds the event loop for seconds), and each array
 * or object costs memory and time however little it holds, far more than a string of the same
 * size; no job needs either.
 *
 * @module
 */

import { TegamiError } from "../core/errors.ts";

/** The deepest nesting of arrays and objects accepted in a body or a frame. */
export const MAX_JSON_DEPTH = 1000;

/** The most arrays and objects accepted in one body or frame. */
export const MAX_JSON_CONTAINERS = 1_000_000;

/**
 * What is wrong with `text` for parsing, strings aside: it nests arrays and objects deeper than
 * `maxDepth`, or holds more than `maxContainers` of them; null when neither. Text of at most
 * `2 × maxDepth` characters is not looked at: valid JSON that short has neither, and invalid JSON
 * that short costs `JSON.parse` nothing to refuse.
 */
export function costlyJson(
  text: string,
  maxDepth: number = MAX_JSON_DEPTH,
  maxContainers: number = MAX_JSON_CONTAINERS,
): string | null {
  if (text.length <= 2 * maxDepth) return null;
  let depth = 0;
  let containers = 0;
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
      if (++depth > maxDepth) return `it nests arrays and objects deeper than ${maxDepth} levels`;
      if (++containers > maxContainers) {
        return `it holds more than ${maxContainers} arrays and objects`;
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return null;
}

/**
 * Throws `invalid_json` naming `what` (the request body, the frame) when `text` nests too deep or
 * holds too many arrays and objects.
 */
export function refuseCostlyJson(text: string, what: string): void {
  const wrong = costlyJson(text);
  if (wrong !== null) throw new TegamiError("invalid_json", `Cannot parse ${what}: ${wrong}`);
}
