/**
 * The dashboard in a real browser, for the browser tests: headless Chromium (Debian's
 * `/usr/bin/chromium`, which `.ci/run` installs) driven by `playwright-core`, and the waits those
 * tests share. Such a test is skipped, with the reason printed, only when Chromium is missing:
 * `ignore: browserMissing("x_test.ts") !== null`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type Browser, chromium, type Page } from "playwright-core";
import type { TestServer } from "./test_server.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Why the browser tests of `file` cannot run (Chromium is missing), printed once; null when they can.
 */
export function browserMissing(file: string): string | null {
  let missing: string | null;
  try {
    missing = Deno.statSync(CHROMIUM).isFile ? null : `${CHROMIUM} is not a file`;
  } catch {
    missing = `${CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)`;
  }
  if (missing !== null) console.log(`${file}: skipping the browser tests: ${missing}`);
  return missing;
}

/** A browser, a page on the dashboard of `server`, and the page's uncaught errors. */
export async function openDashboard(server: TestServer): Promise<
  { browser: Browser; page: Page; errors: string[] } & AsyncDisposable
> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(`${server.url}/`);
  return { browser, page, errors, [Symbol.asyncDispose]: () => browser.close() };
}

/**
 * The text of the first element matching `selector` as it is now (no waiting); "" when there is
 * none.
 */
export async function textOf(page: Page, selector: string): Promise<string> {
  const text = await page.evaluate(
    `(document.querySelector(${JSON.stringify(selector)}) || {}).textContent ?? ""`,
  );
  return String(text);
}

/** Waits until `read` gives a value `ok` accepts; fails with the last value after `ms`. */
export async function until<T>(
  what: string,
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  ms = 5000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) {
      assert.fail(`${what}: still ${JSON.stringify(value)} after ${ms} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Waits until the text of `selector`, trimmed, is `expected` (or matches it). */
export function untilText(
  page: Page,
  selector: string,
  expected: string | RegExp,
): Promise<unknown> {
  return until(
    `text of ${selector}`,
    () => textOf(page, selector),
    (text) => typeof expected === "string" ? text.trim() === expected : expected.test(text),
  );
}
