/**
 * `deno task torture`: the long crash campaign. Runs rounds of SIGKILL cycles on one database
 * (each round on its own queue, drained and checked before the next), prints each round's
 * figures and a total, and exits 1 on any finding.
 *
 * ```sh
 * deno task torture                          # 500 cycles in rounds of 50
 * deno task torture --cycles 20 --round 20   # one short round
 * deno task torture --minutes 40             # stop starting rounds after 40 minutes
 * deno task torture --disruption pause       # SIGSTOP/SIGCONT instead of SIGKILL
 * deno task torture --fault any-token        # a positive control: must fail
 * deno task torture --store postgres         # two servers on a fresh PostgreSQL database
 * deno task torture --store postgres --disruption store --cycles 10   # restart PostgreSQL
 * deno task torture --flows --cycles 100     # flows: SIGKILLs under a load of small flows
 * ```
 *
 * @module
 */

import { parseArgs } from "node:util";
import postgres from "postgres";
import { type Disruption, DISRUPTIONS, runCampaign } from "./campaign.ts";
import { startPrivatePg } from "../helpers/private_pg.ts";
import { type Figures, FINDING_KINDS, type FindingKind, formatReport } from "./checker.ts";
import { type Fault, FAULTS } from "./faulty_store.ts";
import { runFlowCampaign } from "./flow_campaign.ts";
import { FLOW_FINDING_KINDS, type FlowFigures, formatFlowReport } from "./flow_checker.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    cycles: { type: "string", default: "500" },
    round: { type: "string", default: "50" },
    minutes: { type: "string", default: "0" },
    disruption: { type: "string", default: "kill" },
    fault: { type: "string" },
    producers: { type: "string", default: "4" },
    consumers: { type: "string", default: "4" },
    pollers: { type: "string", default: "1" },
    lease: { type: "string", default: "300-1000" },
    up: { type: "string", default: "250-1000" },
    seed: { type: "string" },
    sync: { type: "string", default: "full" },
    dir: { type: "string" },
    store: { type: "string", default: "sqlite" },
    instances: { type: "string" },
    pg: { type: "string" },
    "pg-port": { type: "string", default: "5433" },
    keep: { type: "boolean", default: false },
    history: { type: "string" },
    "history-all": { type: "boolean", default: false },
    flows: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});

if (values.help) {
  console.log(`Usage: deno task torture [flags]

  --cycles N         disruptions in all (default 500)
  --round N          disruptions per round; each round drains and checks (default 50)
  --minutes M        stop the disruptions after M minutes; the round under way is still
                     drained and checked (default 0: no limit; SIGINT does the same)
  --disruption D     kill (SIGKILL + restart), term (SIGTERM + restart), pause (SIGSTOP +
                     SIGCONT) or mixed (70% kill, 15% term, 15% pause) (default kill)
  --fault F          run a server broken on purpose: ack-before-commit, any-token or
                     early-expiry (a positive control: must fail)
  --producers N      HTTP producers (default 4)
  --consumers N      WebSocket consumers (default 4)
  --pollers N        HTTP long-poll consumers (default 1)
  --lease MIN-MAX    consumers' lease lengths, ms (default 300-1000)
  --up MIN-MAX       how long the server runs between disruptions, ms (default 250-1000)
  --seed N           seed of the random choices (default: the time)
  --sync full|normal the server's --sync (default full)
  --dir DIR          where the database goes (default: a temp dir)
  --keep             keep the database afterwards
  --history DIR      write the history of each round with findings to DIR/round-N.json
                     (its seed, the findings, every event), to study them
  --history-all      with --history: every round's, findings or not
  --store S          sqlite (default) or postgres: a fresh database made on the server --pg
                     names (default postgres://postgres@127.0.0.1:5432/postgres, or
                     TEGAMI_TEST_PG), dropped afterwards unless --keep
  --instances N      servers on the database, one disrupted at a time (default 1 on SQLite,
                     2 on PostgreSQL)
  --disruption store restarts PostgreSQL itself (pg_ctl restart -m immediate) under load:
                     a private server in a temp dir on --pg-port (default 5433), so the
                     machine's own is never touched
  --flows            the flow campaign instead (flow_campaign.ts): producers create small
                     flows (chains, fan-ins, fan-outs, random graphs of 3 to 20 nodes), the
                     consumers ack; SIGKILL only; checked by flow_checker.ts`);
  Deno.exit(0);
}

/** `300-1000` → [300, 1000]. */
function range(text: string): [number, number] {
  const [low, high] = text.split("-").map(Number);
  return [low, high ?? low];
}

const fault = (FAULTS as readonly (string | undefined)[]).includes(values.fault)
  ? values.fault as Fault
  : null;
if (values.fault !== undefined && fault === null) {
  console.error(`torture: --fault takes ${FAULTS.join(" or ")}, got "${values.fault}"`);
  Deno.exit(2);
}
const total = Number(values.cycles);
const perRound = Math.min(Number(values.round), total);
const minutes = Number(values.minutes);
const seed = values.seed === undefined ? Date.now() : Number(values.seed);
if (!DISRUPTIONS.includes(values.disruption as Disruption)) {
  console.error(
    `torture: --disruption takes ${DISRUPTIONS.join(", ")}, got "${values.disruption}"`,
  );
  Deno.exit(2);
}
if (values.store !== "sqlite" && values.store !== "postgres") {
  console.error(`torture: --store takes sqlite or postgres, got "${values.store}"`);
  Deno.exit(2);
}
const onPg = values.store === "postgres";
if (values.flows && values.disruption !== "kill") {
  console.error("torture: --flows SIGKILLs the servers: it takes no --disruption");
  Deno.exit(2);
}
if (values.disruption === "store" && !onPg) {
  console.error("torture: --disruption store restarts PostgreSQL: add --store postgres");
  Deno.exit(2);
}
const instances = Number(values.instances ?? (onPg ? 2 : 1));
const dir = values.dir ?? await Deno.makeTempDir({ prefix: "tegami-torture-" });
/** The database: a file, or a fresh PostgreSQL database (on a private server to restart). */
let db = `${dir}/torture.db`;
let cleanup = async () => {};
let restartStore: (() => Promise<void>) | undefined;
if (onPg) {
  let base = values.pg ?? Deno.env.get("TEGAMI_TEST_PG") ??
    "postgres://postgres@127.0.0.1:5432/postgres";
  let stopPrivate = async () => {};
  if (values.disruption === "store") {
    const pg = await startPrivatePg(Number(values["pg-port"]));
    base = pg.url;
    restartStore = () => pg.restart("immediate");
    stopPrivate = async () => await pg[Symbol.asyncDispose]();
  }
  const name = `pgops_torture_${Date.now().toString(36)}`;
  const root = postgres(base, { max: 1, onnotice: () => {} });
  await root.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  db = url.href;
  cleanup = async () => {
    if (!values.keep) await root.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await root.end({ timeout: 1 });
    await stopPrivate();
  };
}
const started = Date.now();
const say = (line: string) =>
  console.log(`[${((Date.now() - started) / 1000).toFixed(0)}s] ${line}`);
say(
  `crash campaign: ${total} ${values.disruption} cycles in rounds of ${perRound}, ` +
    `${instances} server(s), seed ${seed}, db ${db}`,
);

if (values.flows) {
  const sums: Partial<Record<keyof FlowFigures, number>> = {};
  let failed = false;
  const stop = new AbortController();
  const timeLimit = minutes > 0 ? setTimeout(() => stop.abort(), minutes * 60_000) : undefined;
  Deno.addSignalListener("SIGINT", () => stop.abort());
  let done = 0;
  let round = 0;
  while (done < total && !stop.signal.aborted) {
    round++;
    const result = await runFlowCampaign({
      cycles: Math.min(perRound, total - done),
      fault,
      producers: Number(values.producers),
      consumers: Number(values.consumers),
      leaseMs: range(values.lease),
      upMs: range(values.up),
      seed: seed + round,
      db,
      instances,
      queue: `flows-${seed.toString(36)}-${round}`,
      serverArgs: onPg ? ["--pg-poll", "200ms"] : ["--sync", values.sync],
      log: (line) => say(`round ${round}: ${line}`),
      signal: stop.signal,
    });
    done += result.cycles;
    failed ||= !result.report.ok || !result.cleanExit;
    if (values.history !== undefined && (!result.report.ok || values["history-all"])) {
      await Deno.mkdir(values.history, { recursive: true });
      const file = `${values.history}/flows-round-${round}.json`;
      await Deno.writeTextFile(file, JSON.stringify({ seed: seed + round, ...result }));
      say(`round ${round}: history written to ${file}`);
    }
    say(
      `round ${round}: ${result.cycles} kills in ${(result.wallMs / 1000).toFixed(1)} s, ` +
        `${result.report.ok ? "OK" : "FAILED"}${
          result.cleanExit ? "" : " (unclean final stop)"
        }\n` +
        formatFlowReport(result.report),
    );
    for (const [name, value] of Object.entries(result.report.figures)) {
      sums[name as keyof FlowFigures] = (sums[name as keyof FlowFigures] ?? 0) + value;
    }
  }
  clearTimeout(timeLimit);
  say(
    `TOTAL: ${done} kills in ${round} rounds, ` +
      `${((Date.now() - started) / 60_000).toFixed(1)} min, ${failed ? "FAILED" : "OK"}\n  ` +
      Object.entries(sums).map(([name, n]) => `${name} ${n}`).join(", ") +
      `\n  finding kinds checked: ${FLOW_FINDING_KINDS.join(", ")}`,
  );
  await cleanup();
  if (!values.keep && values.dir === undefined) await Deno.remove(dir, { recursive: true });
  Deno.exit(failed ? 1 : 0);
}

const sums: Partial<Record<keyof Figures, number>> = {};
const reasons: Record<string, number> = {};
const findings: Record<FindingKind, number> = Object.fromEntries(
  FINDING_KINDS.map((kind) => [kind, 0]),
) as Record<FindingKind, number>;
let done = 0;
let round = 0;
let unclean = 0;
// SIGINT, SIGTERM or the time limit end the disruptions; the round under way still drains and
// is checked, so the figures cover every cycle that ran.
const stop = new AbortController();
const timeLimit = minutes > 0
  ? setTimeout(() => {
    say(`time limit of ${minutes} minutes reached: finishing the round under way`);
    stop.abort();
  }, minutes * 60_000)
  : undefined;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, () => {
    say(`${signal}: finishing the round under way`);
    stop.abort();
  });
}
while (done < total && !stop.signal.aborted) {
  round++;
  const result = await runCampaign({
    cycles: Math.min(perRound, total - done),
    disruption: values.disruption as Disruption,
    fault,
    producers: Number(values.producers),
    consumers: Number(values.consumers),
    pollers: Number(values.pollers),
    leaseMs: range(values.lease),
    upMs: range(values.up),
    seed: seed + round,
    db,
    instances,
    restartStore,
    queue: `torture-${seed.toString(36)}-${round}`, // unique, so a reused --dir cannot mix runs
    serverArgs: onPg ? ["--pg-poll", "200ms"] : ["--sync", values.sync],
    log: (line) => say(`round ${round}: ${line}`),
    signal: stop.signal,
  });
  done += result.cycles;
  if (values.history !== undefined && (!result.report.ok || values["history-all"])) {
    await Deno.mkdir(values.history, { recursive: true });
    const file = `${values.history}/round-${round}.json`;
    await Deno.writeTextFile(
      file,
      JSON.stringify({
        seed: seed + round,
        findings: result.report.findings,
        events: result.history,
      }),
    );
    say(`round ${round}: history written to ${file}`);
  }
  if (!result.cleanExit) unclean++;
  say(
    `round ${round}: ${result.cycles} cycles in ${(result.wallMs / 1000).toFixed(1)} s, ` +
      `${result.report.ok ? "OK" : "FAILED"}${result.cleanExit ? "" : " (unclean final stop)"}\n` +
      formatReport(result.report),
  );
  for (const [name, value] of Object.entries(result.report.figures)) {
    if (typeof value === "number") {
      sums[name as keyof Figures] = (sums[name as keyof Figures] ?? 0) + value;
    }
  }
  for (const [reason, n] of Object.entries(result.report.figures.reasons)) {
    reasons[reason] = (reasons[reason] ?? 0) + n;
  }
  for (const kind of FINDING_KINDS) findings[kind] += result.report.counts[kind];
}

clearTimeout(timeLimit);
const failed = Object.values(findings).some((n) => n > 0) || unclean > 0;
const s = (name: keyof Figures) => sums[name] ?? 0;
say(
  [
    `TOTAL: ${done} ${values.disruption} cycles in ${round} rounds (SIGKILL ${s("kills")}, ` +
    `SIGTERM ${s("stops")}, SIGSTOP ${s("pauses")}, database restarts ${s("store_restarts")}), ` +
    `${((Date.now() - started) / 60_000).toFixed(1)} min, ${failed ? "FAILED" : "OK"}`,
    `  enqueue calls ${s("enqueue_calls")} (ok ${s("enqueue_ok")}, 503 ${s("enqueue_failed")}, ` +
    `unknown ${s("enqueue_unknown")}); jobs acknowledged ${s("jobs_acknowledged")}; ` +
    `deduplicated ${s("deduplicated")}`,
    `  deliveries ${s("deliveries")} (HTTP ${s("http_deliveries")}) of ${s("jobs_delivered")} ` +
    `jobs; duplicates ` +
    `${s("duplicates")} (${Object.entries(reasons).map(([r, n]) => `${r} ${n}`).join(", ")}); ` +
    `read after a later attempt ${s("read_out_of_order")}`,
    `  acks ok ${s("acks_ok")}, refused ${s("acks_refused")}, unknown ${s("acks_unknown")}; ` +
    `acks across a restart ${s("acks_across_restart")}; nacks ok ${s("nacks_ok")}; ` +
    `forged tokens refused ${s("forged_refused")}/${s("forged_sent")}`,
    `  sockets ${s("connections")} (dropped ${s("drops")}, lost ${s("lost_connections")}); ` +
    `unclean final stops ${unclean}`,
    `  findings: ${FINDING_KINDS.map((kind) => `${kind} ${findings[kind]}`).join(", ")}`,
  ].join("\n"),
);
await cleanup();
if (!values.keep && values.dir === undefined) await Deno.remove(dir, { recursive: true });
Deno.exit(failed ? 1 : 0);
