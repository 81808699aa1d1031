/**
 * Where values sit in JSON text that `JSON.parse` has already accepted, so a job's payload can be
 * stored as the exact text its producer sent: no re-serialisation, and nothing a parse and
 * `JSON.stringify` round trip would change — integers past 2^53, `1.0`, key order and spacing
 * all reach the consumer as they were written.
 *
 * The scanner trusts its input to be valid JSON (callers parse first); it finds members of
 * objects the way `JSON.parse` does, the last of duplicate keys winning.
 *
 * @module
 */

/** A value's place in the text: `text.slice(start, end)`. */
export interface Span {
  /** Index of its first character. */
  start: number;
  /** Index after its last character. */
  end: number;
}

function skipSpace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
    else return i;
  }
}

/** The index after the string whose opening quote is at `i`. */
function skipString(text: string, i: number): number {
  for (;;) {
    const quote = text.indexOf('"', i + 1);
    if (quote < 0) return text.length;
    // The quote closes the string unless an odd run of backslashes escapes it.
    let slashes = 0;
    while (text.charCodeAt(quote - 1 - slashes) === 0x5c) slashes++;
    if (slashes % 2 === 0) return quote + 1;
    i = quote;
  }
}

/** The index after the value that starts at `i` (no leading whitespace). */
function skipValue(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === 0x22) return skipString(text, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (; i < text.length; i++) {
      const d = text.charCodeAt(i);
      if (d === 0x22) i = skipString(text, i) - 1;
      else if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        if (--depth === 0) return i + 1;
      }
    }
    return i;
  }
  // A number, true, false or null: up to the next delimiter.
  for (; i < text.length; i++) {
    const d = text.charCodeAt(i);
    if (d === 0x2c || d === 0x7d || d === 0x5d || d <= 0x20) return i;
  }
  return i;
}

/**
 * The span of member `key` of the object that starts at `i` (leading whitespace allowed); the last
 * of duplicate keys wins, as in `JSON.parse`. Undefined if there is no such member or no object
 * starts there.
 */
export function memberSpan(text: string, key: string, i = 0): Span | undefined {
  i = skipSpace(text, i);
  if (text.charCodeAt(i) !== 0x7b) return undefined;
  let found: Span | undefined;
  i = skipSpace(text, i + 1);
  if (text.charCodeAt(i) === 0x7d) return undefined;
  for (;;) {
    const keyEnd = skipString(text, i);
    const raw = text.slice(i + 1, keyEnd - 1);
    // An escaped key ("p\u0061yload") is compared by what it means.
    const matches = raw === key || (raw.includes("\\") && JSON.parse(`"${raw}"`) === key);
    i = skipSpace(text, skipSpace(text, keyEnd) + 1); // past the colon
    const end = skipValue(text, i);
    if (matches) found = { start: i, end };
    i = skipSpace(text, end);
    if (text.charCodeAt(i) !== 0x2c) return found;
    i = skipSpace(text, i + 1);
  }
}

/** The spans of the elements of the array that starts at `i`; null if no array starts there. */
export function elementSpans(text: string, i = 0): Span[] | null {
  i = skipSpace(text, i);
  if (text.charCodeAt(i) !== 0x5b) return null;
  const elements: Span[] = [];
  i = skipSpace(text, i + 1);
  if (text.charCodeAt(i) === 0x5d) return elements;
  for (;;) {
    const end = skipValue(text, i);
    elements.push({ start: i, end });
    i = skipSpace(text, end);
    if (text.charCodeAt(i) !== 0x2c) return elements;
    i = skipSpace(text, i + 1);
  }
}
