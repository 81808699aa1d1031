/**
 * The crash campaign on PostgreSQL, short form (the long one is `deno task torture --store
 * postgres`): two `tegami serve` processes on one fresh schema, producers and consumers spread
 * over both, one server SIGKILLed at a time under load and restarted, then the history checked
 * by the same checker as on SQLite. The positive controls run the same campaign over the
 * PostgreSQL store broken on purpose and require the checker to fail; the last campaign
 * restarts PostgreSQL itself (`pg_ctl restart -m immediate`, a private server) under load.
 *
 * The SIGKILL campaign runs `TEGAMI_TORTURE_PG_KILLS` cycles, else 5 (`deno task soak:torture`
 * runs 10). A campaign's drain waits out the handover grace of the leases a killed server held,
 * whatever the number of cycles.
 */

import assert from "node:assert/strict";
import { type CampaignOptions, type CampaignResult, runCampaign } from "./campaign.ts";
import { formatReport } from "./checker.ts";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../helpers/pg.ts";
import { startPrivatePg } from "../helpers/private_pg.ts";

const db = await pgTestDatabase();

/** SIGKILL cycles of the main campaign. */
const KILLS = Number(Deno.env.get("TEGAMI_TORTURE_PG_KILLS") ?? 5);

/** The report, for the assertion message when a campaign does not go as expected. */
function explain(result: CampaignResult): string {
  return `${formatReport(result.report)}\nlast servers' stderr:\n${result.lastStderr.slice(-3000)}`;
}

/** A campaign with two servers on a fresh schema of the run's database. */
function onPg(options: Omit<CampaignOptions, "db" | "schema">): Promise<CampaignResult> {
  return runCampaign({
    db: db!.url,
    schema: db!.schema(),
    instances: 2,
    serverArgs: ["--pg-poll", "200ms"],
    ...options,
  });
}

Deno.test({
  name: `postgres: two servers, one SIGKILLed at a time under load ${KILLS} times, lose no ` +
    "acknowledged job and fence every stale ack",
  ignore: db === null,
  sanitizeResources: false, // fetch keeps pooled connections to the killed servers
  fn: async () => {
    const result = await onPg({ cycles: KILLS, upMs: [300, 900] });
    const f = result.report.figures;
    assert.ok(result.report.ok, explain(result));
    assert.ok(result.cleanExit, explain(result));
    assert.equal(f.kills, KILLS);
    assert.equal(f.starts, KILLS + 2);
    assert.equal(result.report.counts.lost, 0);
    assert.equal(result.report.counts["redelivered after ack"], 0);
    // The campaign did what it says: load, duplicates of several kinds, leases surviving a kill.
    assert.ok(f.jobs_acknowledged > 200, explain(result));
    assert.ok(f.duplicates > 0 && f.reasons.nack > 0 && f.reasons.restart > 0, explain(result));
    assert.ok(f.acks_refused > 0, "some late acks were refused");
    // Forged probes were answered and refused; one accepted is a finding (report.ok above), and
    // one whose answer a kill cut off counts as neither.
    assert.ok(f.forged_sent > 0 && f.forged_refused > 0, explain(result));
    assert.ok(f.lost_connections > 0 && f.drops > 0, explain(result));
    assert.ok(f.http_deliveries > 0, explain(result));
  },
});

Deno.test({
  name: "postgres: the checker catches a store that answers acks before they are written",
  ignore: db === null,
  sanitizeResources: false,
  fn: async () => {
    // Drained in full: a job whose ack a kill lost mostly comes back in the drain, once the
    // handover grace of the killed server's lease has passed.
    const result = await onPg({ cycles: 2, fault: "ack-before-commit" });
    assert.equal(result.report.ok, false, explain(result));
    assert.ok(result.report.counts["redelivered after ack"] > 0, explain(result));
    assert.match(result.lastStderr, /UNSAFE FAULT "ack-before-commit" IS ON/);
  },
});

Deno.test({
  name: "postgres: the checker catches a store that accepts any lease token on ack",
  ignore: db === null,
  sanitizeResources: false,
  fn: async () => {
    // Accepted stale tokens show under load: the drain is cut short, as a full one would only
    // wait out the handover grace of the killed server's leases.
    const result = await onPg({ cycles: 2, fault: "any-token", drainTimeoutMs: 1000 });
    assert.equal(result.report.ok, false, explain(result));
    assert.ok(result.report.counts["stale ack accepted"] > 0, explain(result));
    assert.match(result.lastStderr, /UNSAFE FAULT "any-token" IS ON/);
  },
});

Deno.test({
  name: "postgres: the checker catches a store that ends leases before they run out",
  ignore: db === null,
  sanitizeResources: false,
  fn: async () => {
    // Two live leases show under load: the drain is cut short, as for any-token.
    const result = await onPg({ cycles: 2, fault: "early-expiry", drainTimeoutMs: 1000 });
    assert.equal(result.report.ok, false, explain(result));
    assert.ok(result.report.counts["unexplained duplicate"] > 0, explain(result));
    assert.match(result.lastStderr, /UNSAFE FAULT "early-expiry" IS ON/);
  },
});

Deno.test({
  name: "postgres: PostgreSQL restarted as after a crash twice under two servers loses no " +
    "acknowledged job and leaves none leased",
  ignore: db === null,
  sanitizeResources: false,
  fn: async () => {
    // A private server (its own port and directory), so the shared one is never restarted.
    await using pg = await startPrivatePg();
    const result = await runCampaign({
      db: pg.url,
      instances: 2,
      serverArgs: ["--pg-poll", "200ms"],
      disruption: "store",
      restartStore: () => pg.restart("immediate"),
      cycles: 2,
      upMs: [1000, 2000],
    });
    const f = result.report.figures;
    assert.ok(result.report.ok, explain(result)); // a job still leased after the drain fails it
    assert.ok(result.cleanExit, explain(result));
    assert.equal(f.store_restarts, 2);
    assert.equal(f.kills, 0);
    assert.ok(f.jobs_acknowledged > 100, explain(result));
    assert.ok(f.enqueue_failed > 0, "writes were refused while PostgreSQL was down");
  },
});

dropPgTestDatabaseAfterwards(db);
