/**
 * The state the job browser opens a queue on, checked without a browser: the function is taken
 * from the served script and run here (the browser tests in job_browser_test.ts click through
 * it in CI).
 */

import assert from "node:assert/strict";
import { DASHBOARD_ASSETS } from "../../lib/dashboard/assets.ts";

const script = DASHBOARD_ASSETS.find((asset) => asset.path === "/dashboard.js")!.body;

/** A top-level function of the script, by name, run against the script's own `STATES`. */
function scriptFunction(name: string): (...args: unknown[]) => unknown {
  const states = script.match(/const STATES = (\[[^\]]*\]);/);
  assert.ok(states, "the script declares STATES");
  const start = script.indexOf(`  function ${name}(`);
  assert.ok(start >= 0, `the script declares ${name}()`);
  const end = script.indexOf("\n  }\n", start);
  const source = script.slice(start, end + "\n  }\n".length);
  return new Function(`const STATES = ${states[1]};\n${source}\nreturn ${name};`)();
}

const counts = (some: Record<string, number>) => ({
  blocked: 0,
  pending: 0,
  delayed: 0,
  leased: 0,
  done: 0,
  dead: 0,
  cancelled: 0,
  ...some,
});

Deno.test("dashboard firstStateWithJobs() picks the first state, in tab order, that holds jobs", () => {
  const first = scriptFunction("firstStateWithJobs");
  assert.equal(first(counts({ done: 2 })), "done");
  assert.equal(first(counts({ dead: 1, cancelled: 4 })), "dead");
  assert.equal(first(counts({ pending: 3, done: 9 })), "pending");
  assert.equal(first(counts({ leased: 1, done: 9 })), "leased");
  assert.equal(first(counts({ blocked: 2, pending: 1 })), "blocked");
  assert.equal(first(counts({})), "pending");
  assert.equal(first(null), "pending");
});

Deno.test("dashboard Jobs button and queue choice open the browser on the first state with jobs", () => {
  const open = script.slice(script.indexOf("  function openJobs("));
  assert.match(
    open.slice(0, open.indexOf("\n  }\n")),
    /if \(kind === BROWSE\) openOnJobs\(name\);/,
  );
  assert.match(
    script,
    /if \(kind === BROWSE\) openOnJobs\(field\(kind\.id \+ "-queue"\)\.value\);/,
  );
});
