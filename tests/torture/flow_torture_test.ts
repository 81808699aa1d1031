/**
 * The flow crash campaign, short form (the long one is `deno task torture --flows`): servers
 * under a load of small flows SIGKILLed at random instants and restarted, then the history
 * judged by `flow_checker.ts`: no node of an answered flow lost, none stuck blocked, each ended
 * as its prerequisites say (cancelled after a dead one), no dependent delivered before its
 * prerequisites' acks, none delivered again after its ack.
 * `TEGAMI_FLOW_TORTURE_CYCLES` sets the kills (default 5 on SQLite, 2 on PostgreSQL). The
 * checker's rules fail their hand-made histories in `flow_checker_test.ts`; the positive control
 * against a server broken on purpose is `deno task torture --flows --fault ack-before-commit`,
 * which must fail.
 */

import assert from "node:assert/strict";
import { type FlowCampaignResult, runFlowCampaign } from "./flow_campaign.ts";
import { formatFlowReport } from "./flow_checker.ts";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../helpers/pg.ts";

const CYCLES = Number(Deno.env.get("TEGAMI_FLOW_TORTURE_CYCLES") ?? 5);
/**
 * On PostgreSQL, 2 unless the variable says otherwise: its drain waits out the leases a killed
 * server gave (a grace of 5 s before another server ends them), whatever the number of kills.
 */
const PG_CYCLES = Number(Deno.env.get("TEGAMI_FLOW_TORTURE_CYCLES") ?? 2);

/** The report, for the assertion message when a campaign does not go as expected. */
function explain(result: FlowCampaignResult): string {
  return `${formatFlowReport(result.report)}\nlast server stderr:\n${
    result.lastStderr.slice(-2000)
  }`;
}

/** Asserts a campaign on an honest server found nothing and did what it says. */
function assertClean(result: FlowCampaignResult, kills: number): void {
  const f = result.report.figures;
  assert.ok(result.report.ok, explain(result));
  assert.ok(result.cleanExit, explain(result));
  assert.equal(f.kills, kills);
  // Load, answers cut by the kills (a create retried under its key, or an ack), released nodes,
  // redeliveries. (With two servers a kill may cut no create: the producers' other server
  // answers them.)
  assert.ok(f.flows_acknowledged > 10 * kills, explain(result));
  assert.ok(f.create_unknown + f.acks_unknown > 0, explain(result));
  assert.ok(f.released_deliveries > 100, explain(result));
  assert.ok(f.redeliveries > 0, explain(result));
  // Releases across a kill (the window between an ack and its dependents' delivery) are counted,
  // not required: a few kills may miss it (the long run has about six per kill).
}

Deno.test({
  name: `flows: a server SIGKILLed ${CYCLES} times under a load of flows loses no node, ` +
    "releases each dependent after its prerequisites' acks and leaves none blocked",
  sanitizeResources: false, // fetch keeps pooled connections to the killed servers
  fn: async () => {
    const result = await runFlowCampaign({ cycles: CYCLES });
    assertClean(result, CYCLES);
    const f = result.report.figures;
    // One server: each kill cuts creates in flight, retried under their key.
    assert.ok(f.create_unknown > 0, explain(result));
    // Nodes nacked dead, and dependents cancelled for it (2 % of deliveries: too few to count on
    // in the shorter PostgreSQL run).
    assert.ok(f.dead_nodes > 0 && f.cancelled_nodes > 0, explain(result));
  },
});

const db = await pgTestDatabase();

Deno.test({
  name: `flows: postgres: two servers, one SIGKILLed at a time ${PG_CYCLES} times under a load ` +
    "of flows, lose no node and leave none blocked",
  ignore: db === null,
  sanitizeResources: false,
  fn: async () => {
    const result = await runFlowCampaign({
      cycles: PG_CYCLES,
      db: db!.url,
      schema: db!.schema(),
      instances: 2,
      serverArgs: ["--pg-poll", "200ms"],
      upMs: [500, 1000],
    });
    assertClean(result, PG_CYCLES);
  },
});

dropPgTestDatabaseAfterwards(db);
