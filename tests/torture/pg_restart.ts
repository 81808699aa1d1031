/**
 * `deno task pg-restart`: restarts PostgreSQL itself (`pg_ctl restart -m immediate`, a crash
 * and recovery) under load, again and again, with two tegami servers on it, and checks that
 * no acknowledged write was lost and no job was left leased past its lease.
 *
 * The database is a private server in a temp directory (tests/helpers/private_pg.ts), so the
 * machine's shared PostgreSQL is never touched. Producers enqueue keyed jobs (a retry after an
 * unknown outcome is then safe) through either server; HTTP consumers lease and ack through
 * either server. At the end the load stops, the queue is drained, and the stored jobs are read
 * with the store-neutral inspector:
 *
 * - lost: a job whose enqueue was answered 2xx is missing;
 * - not drained: such a job neither `done` nor `dead` after the drain (by the state it is
 *   in); a job whose acks kept failing through outages is delivered again each time and may
 *   use up its attempts, which makes it `dead`, as the lifecycle says;
 * - redelivered after ack: a job delivered again after an ack of it was answered 200;
 * - stuck: a job still `leased` after its lease ran out plus two poll intervals.
 *
 * Flags: `--cycles N` (restarts, default 10), `--every MS` (between restarts, default 2500),
 * `--port P` (the private server's, default 5433), `--json`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { openInspector } from "../helpers/inspector.ts";
import { startPrivatePg } from "../helpers/private_pg.ts";
import { type ServerProcess, spawnServer } from "../helpers/process_server.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    cycles: { type: "string", default: "10" },
    every: { type: "string", default: "2500" },
    port: { type: "string", default: "5433" },
    json: { type: "boolean", default: false },
  },
});
const cycles = Number(values.cycles);
const everyMs = Number(values.every);
const LEASE_MS = 5_000;
const POLL_MS = 500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message: string) => console.error(`[pg-restart] ${message}`);

/** One HTTP call; `null` when there was no answer (refused, reset). */
async function call(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> } | null> {
  try {
    const response = await fetch(url + path, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(20_000),
    });
    const text = await response.text();
    return { status: response.status, body: text === "" ? {} : JSON.parse(text) };
  } catch {
    return null;
  }
}

const counts = {
  restarts: 0,
  enqueueCalls: 0,
  enqueueAcknowledged: 0,
  enqueueUnavailable: 0,
  enqueueUnknown: 0,
  deliveries: 0,
  redeliveries: 0,
  acks: 0,
  ackLeaseLost: 0,
  ackUnavailable: 0,
  ackUnknown: 0,
  leaseCallsRefused: 0,
};
/** Jobs whose enqueue was answered 2xx: uid → id. */
const acknowledged = new Map<string, number>();
/** Jobs whose ack was answered 200, by id. */
const ackedIds = new Set<number>();
const redeliveredAfterAck: number[] = [];
const deliveredIds = new Set<number>();

const pg = await startPrivatePg(Number(values.port));
const servers: ServerProcess[] = [];
for (let i = 0; i < 2; i++) {
  servers.push(
    await spawnServer([
      "--db",
      pg.url,
      "--lease",
      `${LEASE_MS}ms`,
      "--pg-poll",
      `${POLL_MS}ms`,
    ]),
  );
}
log(`two servers on ${pg.url}: ${servers.map((s) => s.url).join(", ")}`);

let producing = true;
let consuming = true;
/** Set when the drain gives up: producers stop retrying what was never acknowledged. */
let givingUp = false;
let next = 0;

async function producer(p: number): Promise<void> {
  let retry: string | null = null;
  while (producing || (retry !== null && !givingUp)) {
    const uid: string = retry ?? `u${p}-${next++}`;
    const server = servers[(next + p) % servers.length];
    counts.enqueueCalls++;
    const answer = await call(server.url, "POST", "/v1/queues/work/jobs", {
      payload: { uid },
      key: uid,
    });
    if (answer !== null && (answer.status === 201 || answer.status === 200)) {
      counts.enqueueAcknowledged++;
      acknowledged.set(uid, answer.body.id as number);
      retry = null;
    } else {
      if (answer === null) counts.enqueueUnknown++;
      else counts.enqueueUnavailable++;
      retry = uid; // the key makes the retry safe whatever happened
      await sleep(50);
    }
  }
}

async function consumer(c: number): Promise<void> {
  while (consuming) {
    const server = servers[c % servers.length];
    const leased = await call(server.url, "POST", "/v1/queues/work/leases", {
      max: 10,
      wait_ms: 500,
    });
    if (leased === null || leased.status !== 200) {
      counts.leaseCallsRefused++;
      await sleep(50);
      continue;
    }
    const jobs = leased.body.jobs as { id: number; lease: { token: string } }[];
    for (const job of jobs) {
      counts.deliveries++;
      if (deliveredIds.has(job.id)) counts.redeliveries++;
      deliveredIds.add(job.id);
      if (ackedIds.has(job.id)) redeliveredAfterAck.push(job.id);
      // Ack through either server: a lease is the database's, not the server's.
      const acker = servers[(c + job.id) % servers.length];
      const ack = await call(acker.url, "POST", `/v1/jobs/${job.id}/ack`, {
        token: job.lease.token,
      });
      if (ack === null) counts.ackUnknown++;
      else if (ack.status === 200) {
        counts.acks++;
        ackedIds.add(job.id);
      } else if (ack.status === 409) counts.ackLeaseLost++;
      else counts.ackUnavailable++;
    }
  }
}

const started = performance.now();
const load = [
  ...Array.from({ length: 4 }, (_, p) => producer(p)),
  ...Array.from({ length: 4 }, (_, c) => consumer(c)),
];
for (let i = 0; i < cycles; i++) {
  await sleep(everyMs);
  await pg.restart("immediate");
  counts.restarts++;
  log(`restart ${i + 1}/${cycles}: ${acknowledged.size} acknowledged, ${ackedIds.size} acked`);
}
await sleep(everyMs);
producing = false;
// Drain: every acknowledged job must end done. Leases cut by a restart end at their expiry.
const drainUntil = Date.now() + 60_000 + LEASE_MS;
const inspector = openInspector(pg.url);
let remaining: number[] = [];
for (;;) {
  const jobs = await inspector.jobs("work");
  const done = new Set(
    jobs.filter((j) => j.state === "done" || j.state === "dead").map((j) => j.id),
  );
  remaining = [...acknowledged.values()].filter((id) => !done.has(id));
  if (remaining.length === 0 || Date.now() > drainUntil) break;
  await sleep(250);
}
consuming = false;
givingUp = true;
await Promise.all(load);
const jobs = await inspector.jobs("work");
const byId = new Map(jobs.map((j) => [j.id, j]));
const lost = [...acknowledged.values()].filter((id) => !byId.has(id));
const notDrained: Record<string, number> = {};
let deadJobs = 0;
for (const id of acknowledged.values()) {
  const state = byId.get(id)?.state;
  if (state === "dead") deadJobs++;
  else if (state !== undefined && state !== "done") {
    notDrained[state] = (notDrained[state] ?? 0) + 1;
  }
}
const now = Date.now();
const stuck = jobs.filter((j) =>
  j.state === "leased" && j.lease_expires_at !== null &&
  j.lease_expires_at < now - 2 * POLL_MS
);
const integrity = await inspector.integrity();
await inspector.close();
const stderrs: string[] = [];
for (const server of servers) {
  server.kill("SIGTERM");
  const { code, stderr } = await server.exited();
  stderrs.push(stderr);
  if (code !== 0) log(`a server exited ${code}`);
}
if (Deno.env.get("TEGAMI_PG_RESTART_LOGS") !== undefined) {
  await Deno.writeTextFile(Deno.env.get("TEGAMI_PG_RESTART_LOGS")!, stderrs.join("\n---\n"));
}

const report = {
  seconds: Math.round((performance.now() - started) / 100) / 10,
  ...counts,
  jobsAcknowledged: acknowledged.size,
  jobsStored: jobs.length,
  lost: lost.length,
  notDrained: JSON.stringify(notDrained),
  deadAfterAttempts: deadJobs,
  redeliveredAfterAck: redeliveredAfterAck.length,
  stuckLeased: stuck.length,
  integrity,
};
if (values.json) console.log(JSON.stringify(report));
else {
  for (const [key, value] of Object.entries(report)) console.log(`${key.padEnd(22)} ${value}`);
}
const failed = lost.length > 0 || redeliveredAfterAck.length > 0 || stuck.length > 0 ||
  Object.keys(notDrained).length > 0 || integrity !== "ok";
if (failed) {
  log(
    `FAILED: lost ${lost.slice(0, 10)}, redelivered after ack ${
      redeliveredAfterAck.slice(0, 10)
    }, stuck ${stuck.slice(0, 10).map((j) => j.id)}`,
  );
}
await pg[Symbol.asyncDispose]();
Deno.exit(failed ? 1 : 0);
