/**
 * Sizes and durations as people write them on a command line: `512KiB`, `1MiB`, `30s`, `24h`.
 *
 * Parsing is exact: the number is read as a decimal and multiplied with integer arithmetic, so
 * `1.1KB` is 1100 bytes (not 1100.0000000000002) and `1.5s` is 1500 ms. A result that is not a
 * whole number of bytes or milliseconds is rejected rather than rounded.
 *
 * @module
 */

const SIZE_UNITS: Readonly<Record<string, number>> = {
  "": 1,
  b: 1,
  kb: 1000,
  mb: 1000 ** 2,
  gb: 1000 ** 3,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
};

const DURATION_UNITS: Readonly<Record<string, number>> = {
  "": 1,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** A non-negative decimal number, then an optional unit made of letters. */
const QUANTITY = /^(\d+)(?:\.(\d+))?\s*([a-z]*)$/i;

/**
 * Reads `text` as a quantity in `units`; returns the whole number of base units, or a reason.
 * Decimals are scaled with bigints so that no floating point error can creep in.
 */
function parseQuantity(
  text: string,
  units: Readonly<Record<string, number>>,
  base: string,
): number | string {
  const match = QUANTITY.exec(text.trim());
  if (match === null) return "expected a non-negative number with an optional unit";
  const [, whole, fraction = "", unit] = match;
  const multiplier = units[unit.toLowerCase()];
  if (multiplier === undefined) return `unknown unit "${unit}"`;
  const scaled = BigInt(whole + fraction) * BigInt(multiplier);
  const divisor = 10n ** BigInt(fraction.length);
  if (scaled % divisor !== 0n) return `not a whole number of ${base}`;
  const value = scaled / divisor;
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) return "too large";
  return Number(value);
}

/**
 * Parses a size into bytes: plain bytes (`4096`), or a number with a unit, `B`, `KiB`, `MiB`,
 * `GiB` (powers of 1024) or `KB`, `MB`, `GB` (powers of 1000). Units are case-insensitive,
 * surrounding whitespace is ignored, and `1.5KiB` is fine because it is a whole 1536 bytes.
 *
 * @throws {Error} when the text is not a non-negative whole number of bytes.
 */
export function parseSize(text: string): number {
  const result = parseQuantity(text, SIZE_UNITS, "bytes");
  if (typeof result === "string") {
    throw new Error(
      `Cannot parse size "${text}": ${result} (use bytes or B, KB, MB, GB, KiB, MiB, GiB)`,
    );
  }
  return result;
}

/**
 * Parses a duration into milliseconds: plain milliseconds (`250`), or a number with a unit,
 * `ms`, `s`, `m`, `h` or `d`. Units are case-insensitive, surrounding whitespace is ignored, and
 * `1.5s` is fine because it is a whole 1500 ms.
 *
 * @throws {Error} when the text is not a non-negative whole number of milliseconds.
 */
export function parseDuration(text: string): number {
  const result = parseQuantity(text, DURATION_UNITS, "milliseconds");
  if (typeof result === "string") {
    throw new Error(
      `Cannot parse duration "${text}": ${result} (use milliseconds or ms, s, m, h, d)`,
    );
  }
  return result;
}

/** Size units for {@linkcode formatSize}, largest first; the first exact fit wins. */
const SIZE_FORMATS: readonly (readonly [string, number])[] = [
  ["GiB", 1024 ** 3],
  ["GB", 1000 ** 3],
  ["MiB", 1024 ** 2],
  ["MB", 1000 ** 2],
  ["KiB", 1024],
  ["KB", 1000],
];

/**
 * Formats bytes in the largest unit that divides them exactly, so the text parses back to the
 * same number: `1048576` → `"1MiB"`, `1000` → `"1KB"`, `1500` → `"1500B"`.
 */
export function formatSize(bytes: number): string {
  if (bytes !== 0) {
    for (const [unit, size] of SIZE_FORMATS) {
      if (bytes % size === 0) return `${bytes / size}${unit}`;
    }
  }
  return `${bytes}B`;
}

const DAY_MS = 86_400_000;

/** Duration units for {@linkcode formatDuration} below a day, largest first. */
const DURATION_FORMATS: readonly (readonly [string, number])[] = [
  ["h", 3_600_000],
  ["m", 60_000],
  ["s", 1000],
];

/**
 * Formats milliseconds in the largest unit that divides them exactly, so the text parses back to
 * the same number: `30000` → `"30s"`, `1500` → `"1500ms"`. One day reads as `"24h"`; whole
 * days beyond it as days (`"7d"`).
 */
export function formatDuration(ms: number): string {
  if (ms > DAY_MS && ms % DAY_MS === 0) return `${ms / DAY_MS}d`;
  if (ms !== 0) {
    for (const [unit, size] of DURATION_FORMATS) {
      if (ms % size === 0) return `${ms / size}${unit}`;
    }
  }
  return `${ms}ms`;
}
