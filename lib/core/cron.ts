/**
 * Cron expressions in a time zone: when a schedule's ticks fall. Parsing and the calendar are
 * the `croner` package's, its release file kept in `vendor/croner/` (see the README there): it
 * has no dependencies and reads no files, so `deno task start` downloads nothing and a compiled
 * binary carries it. This module fixes its options and turns its failures into
 * `validation_failed` naming the field.
 *
 * The syntax is standard 5-field cron (`minute hour day-of-month month day-of-week`) with an
 * optional leading seconds field, plus croner's extensions (`L`, `W`, `#`, names such as `MON`
 * and `JAN`, and the nicknames `@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`). Day of
 * month and day of week combine with OR, as in Vixie cron.
 *
 * Daylight-saving changes follow Vixie cron, as croner does:
 * - a fixed-time expression (one value in each of seconds, minutes and hours, `30 2 * * *`)
 *   whose time falls in a skipped hour runs once at the first valid time after the gap, the
 *   same day; in a repeated hour it runs once, at the first occurrence;
 * - an interval expression (a wildcard, step, range or list in seconds, minutes or hours,
 *   `*\/15 * * * *`) skips the times that do not exist, and runs at both occurrences of a
 *   repeated time.
 *
 * @module
 */

// @ts-types="./vendor/croner/croner.d.ts"
import { Cron } from "./vendor/croner/croner.js";
import { invalid } from "./errors.ts";

/** The longest cron expression accepted, in characters. */
export const MAX_CRON_CHARS = 256;

/** A parsed cron expression bound to its time zone. */
export interface CronTimes {
  /** The expression as given. */
  readonly expression: string;
  /** The IANA time zone it is read in. */
  readonly timezone: string;
  /** The first tick strictly after `after` (ms since the epoch), or null if none ever comes. */
  next(after: number): number | null;
  /** Up to `n` ticks strictly before `before`, most recent first. */
  previous(before: number, n: number): number[];
}

/**
 * Parses `expression` in `timezone` (an IANA name such as `Europe/Berlin`, or `UTC`). Throws
 * `validation_failed` naming `timezone` or `cron` and why; an expression that can never match
 * (`0 0 30 2 *`) is refused too.
 */
export function parseCron(expression: string, timezone: string, now: number): CronTimes {
  checkTimezone(timezone);
  if (expression.length > MAX_CRON_CHARS) {
    throw invalid("cron", `longer than ${MAX_CRON_CHARS} characters`);
  }
  const text = expression.trim();
  const fields = text.split(/\s+/).length;
  if (!text.startsWith("@") && fields !== 5 && fields !== 6) {
    throw invalid(
      "cron",
      `expected 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds ` +
        `first, got ${fields}`,
    );
  }
  let cron: Cron;
  try {
    cron = new Cron(text, { timezone, mode: "5-or-6-parts", paused: true });
  } catch (error) {
    throw invalid("cron", describeCronError(error));
  }
  const next = (after: number): number | null => {
    const at = cron.nextRun(new Date(after));
    return at === null ? null : at.getTime();
  };
  const previous = (before: number, n: number): number[] =>
    cron.previousRuns(n, new Date(before)).map((at) => at.getTime());
  if (next(now) === null) throw invalid("cron", "the expression never matches a date to come");
  return { expression, timezone, next, previous };
}

/** Throws `validation_failed` on `timezone` unless it is a time zone the runtime knows. */
export function checkTimezone(timezone: string): void {
  if (timezone.length === 0 || timezone.length > 64) {
    throw invalid("timezone", "expected an IANA time zone name such as Europe/Berlin or UTC");
  }
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
  } catch {
    throw invalid(
      "timezone",
      `unknown time zone "${timezone}": expected an IANA name such as Europe/Berlin or UTC`,
    );
  }
}

/**
 * The ticks of `times` in (`after`, `upTo`], oldest first, at most `max` of them: the most
 * recent ones when there are more (a long outage of a per-second schedule must not enqueue a
 * year of jobs). `more` says some older ones were left out.
 */
export function ticksBetween(
  times: CronTimes,
  after: number,
  upTo: number,
  max: number,
): { ticks: number[]; more: boolean } {
  const found = times.previous(upTo + 1, max + 1).filter((at) => at > after);
  const more = found.length > max;
  return { ticks: found.slice(0, max).reverse(), more };
}

/** croner's message without its class prefix (`CronPattern: Invalid value for minute: 61`). */
function describeCronError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const text = message.replace(/^Cron\w*:\s*/, "");
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
