/**
 * The crash campaign, short form (the long one is `deno task torture`): the real server in a
 * child process SIGKILLed under load and restarted on the same file, then the history checked.
 * The positive controls run the same campaign against a server broken on purpose
 * (`faulty_server.ts`) and require the checker to fail: a checker that cannot fail proves nothing.
 *
 * The SIGKILL campaign runs `TEGAMI_TORTURE_KILLS` cycles, else 12 (`deno task soak:torture`
 * runs 30): each cycle is the same whatever their number, and every figure asserted below is
 * reached many times over in 12.
 */

import assert from "node:assert/strict";
import { type CampaignOptions, type CampaignResult, runCampaign } from "./campaign.ts";
import { formatReport } from "./checker.ts";

/** SIGKILL cycles of the main campaign. */
const KILLS = Number(Deno.env.get("TEGAMI_TORTURE_KILLS") ?? 12);

/** A campaign against a server that deletes each job at its ack, checked as such. */
const DELETING_AT_ACK = {
  serverArgs: ["--retain-done", "0"],
  check: { deletedAtAck: true },
} as const satisfies Partial<CampaignOptions>;

/** The report, for the assertion message when a campaign does not go as expected. */
function explain(result: CampaignResult): string {
  return `${formatReport(result.report)}\nlast server stderr:\n${result.lastStderr.slice(-2000)}`;
}

Deno.test({
  name: `a server SIGKILLed ${KILLS} times under load loses no acknowledged job and fences every ` +
    "stale ack",
  sanitizeResources: false, // fetch keeps pooled connections to the killed servers
  fn: async () => {
    const result = await runCampaign({ cycles: KILLS, upMs: [250, 1000] });
    const f = result.report.figures;
    assert.ok(result.report.ok, explain(result));
    assert.ok(result.cleanExit, explain(result));
    assert.equal(f.kills, KILLS);
    assert.equal(f.starts, KILLS + 1);
    // The campaign did what it says: load, unknown outcomes, duplicates of several kinds.
    assert.ok(f.jobs_acknowledged > 200, explain(result));
    assert.ok(f.enqueue_unknown > 0, explain(result));
    assert.ok(f.duplicates > 0 && f.reasons.nack > 0 && f.reasons.restart > 0, explain(result));
    assert.ok(f.acks_refused > 0, "some late acks were refused");
    assert.ok(f.forged_refused > 0, explain(result)); // an accepted one is a finding
    assert.ok(f.lost_connections > 0 && f.drops > 0, explain(result));
    assert.ok(f.http_deliveries > 0, explain(result));
  },
});

Deno.test({
  name: "a server deleting jobs at their ack (--retain-done 0), SIGKILLed 6 times under load, " +
    "loses no job it did not see acked",
  sanitizeResources: false,
  fn: async () => {
    const result = await runCampaign({
      cycles: 6,
      upMs: [250, 1000],
      ...DELETING_AT_ACK,
    });
    const f = result.report.figures;
    assert.ok(result.report.ok, explain(result));
    assert.ok(result.cleanExit, explain(result));
    assert.ok(f.jobs_acknowledged > 100 && f.acks_ok > 100, explain(result));
    assert.ok(f.acks_unknown > 0 || f.acks_across_restart > 0, explain(result));
    // Deleted at their acks: of the jobs acknowledged and drained, few rows are left.
    assert.ok(f.final_jobs < f.jobs_acknowledged / 2, explain(result));
  },
});

Deno.test({
  name: "the checker of a server deleting jobs at their ack still catches writes answered before " +
    "their commit",
  sanitizeResources: false,
  fn: async () => {
    const result = await runCampaign({
      cycles: 2,
      fault: "ack-before-commit",
      ...DELETING_AT_ACK,
    });
    assert.equal(result.report.ok, false, explain(result));
    assert.ok(result.report.counts.lost > 0, explain(result));
  },
});

Deno.test({
  name: "a server stopped with SIGTERM under load and restarted keeps every lease and every job",
  sanitizeResources: false,
  fn: async () => {
    const result = await runCampaign({ cycles: 4, disruption: "term", upMs: [300, 800] });
    const f = result.report.figures;
    assert.ok(result.report.ok, explain(result)); // a non-zero exit on SIGTERM is a finding
    assert.equal(f.stops, 4);
    assert.equal(f.kills, 0);
    assert.ok(f.jobs_acknowledged > 20, explain(result));
  },
});

Deno.test({
  name: "the checker catches a server that answers writes before they are committed",
  sanitizeResources: false,
  fn: async () => {
    const result = await runCampaign({ cycles: 2, fault: "ack-before-commit" });
    assert.equal(result.report.ok, false, explain(result));
    assert.ok(result.report.counts.lost > 0, explain(result));
    assert.match(result.lastStderr, /UNSAFE FAULT "ack-before-commit" IS ON/);
  },
});

Deno.test({
  name: "the checker catches a server that accepts any lease token on ack",
  sanitizeResources: false,
  fn: async () => {
    const result = await runCampaign({ cycles: 2, fault: "any-token" });
    assert.equal(result.report.ok, false, explain(result));
    assert.ok(result.report.counts["stale ack accepted"] > 0, explain(result));
    assert.match(result.lastStderr, /UNSAFE FAULT "any-token" IS ON/);
  },
});

Deno.test({
  name: "the checker catches a server that ends leases before they run out (two live leases)",
  sanitizeResources: false,
  fn: async () => {
    const result = await runCampaign({ cycles: 2, fault: "early-expiry" });
    assert.equal(result.report.ok, false, explain(result));
    assert.ok(result.report.counts["unexplained duplicate"] > 0, explain(result));
    assert.match(result.lastStderr, /UNSAFE FAULT "early-expiry" IS ON/);
  },
});
