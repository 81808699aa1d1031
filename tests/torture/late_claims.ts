/**
 * Short leases under load: HTTP callers lease jobs that allow one attempt and never ack them,
 * so every job runs out and ends dead. An attempt is used by a delivery, so every job must reach
 * a caller first, however late the database answers a claim (docs/reliability.md, "Attempts").
 * Optionally one claim in `slowEvery` is answered `LATE_MS` after it committed (a slow database),
 * past its leases' end.
 *
 * A real server in this process, on loopback; bounded by a job count and a deadline.
 * `deno task soak:attempts [--db URL] [JOBS]` runs the 100,000-job version;
 * tests/server/late_claims_test.ts a small one with slow claims on both stores.
 *
 * @module
 */

import { resolveServeConfig, type ServeConfig } from "../../lib/config/serve_config.ts";
import { systemClock } from "../../lib/core/clock.ts";
import { silentLogger } from "../../lib/observe/log.ts";
import { startServer } from "../../lib/server.ts";
import { openStore } from "../../lib/store/open_store.ts";
import type { Store } from "../../lib/store/store.ts";

/** How late a slow claim is answered, ms: past its leases' end. */
export const LATE_MS = 150;

/** What one run counted. */
export interface LateClaimFigures {
  /** Jobs enqueued. */
  jobs: number;
  /** Distinct jobs that reached a caller. */
  delivered: number;
  /** Jobs dead at the end. */
  dead: number;
  /** Deliveries that were not a job's first attempt (must be none: each job allows one). */
  laterAttempts: number;
  /** Lease calls made, and the slowest, ms. */
  calls: number;
  slowestCallMs: number;
  /** From the first lease call until every job was dead, ms. */
  ms: number;
}

/** Options of {@linkcode runLateClaims}. */
export interface LateClaimOptions {
  /** The server's settings beside the defaults (`db` at least). */
  config: Partial<ServeConfig>;
  jobs: number;
  callers: number;
  leaseMs: number;
  /** Answer every n-th claim `LATE_MS` late; 0: never. */
  slowEvery: number;
  /** Gives up (throws) after this long, ms. */
  deadlineMs: number;
}

/** Answers every `every`-th claim of `queue` that leased anything {@linkcode LATE_MS} late. */
function slowClaims(store: Store, queue: string, every: number): Store {
  let n = 0;
  const late = async <T>(q: string, got: T, leased: boolean): Promise<T> => {
    if (q === queue && leased && ++n % every === 0) {
      await new Promise((resolve) => setTimeout(resolve, LATE_MS));
    }
    return got;
  };
  const claim = store.claim.bind(store);
  store.claim = async (q, max, leaseMs, now) => {
    const got = await claim(q, max, leaseMs, now);
    return late(q, got, got.length > 0);
  };
  const claimFair = store.claimFair.bind(store);
  store.claimFair = async (q, wants, now) => {
    const lists = await claimFair(q, wants, now);
    return late(q, lists, lists.some((l) => l.length > 0));
  };
  return store;
}

async function call(url: string, method: string, body?: unknown): Promise<unknown> {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${text}`);
  return JSON.parse(text);
}

/** Runs one load; throws if the jobs are not all dead by the deadline. */
export async function runLateClaims(options: LateClaimOptions): Promise<LateClaimFigures> {
  const config: ServeConfig = { ...resolveServeConfig([], {}), port: 0, ...options.config };
  const server = await startServer({
    config,
    clock: systemClock,
    log: silentLogger,
    openStore: options.slowEvery > 0
      ? async (c, context) => slowClaims(await openStore(c, context), "q", options.slowEvery)
      : undefined,
  });
  try {
    const base = `${server.url}/v1/queues/q`;
    for (let i = 0; i < options.jobs; i += 1_000) {
      const jobs = Array.from(
        { length: Math.min(1_000, options.jobs - i) },
        (_, k) => ({ payload: i + k, max_attempts: 1, lease_ms: options.leaseMs }),
      );
      await call(`${base}/jobs`, "POST", { jobs });
    }
    const delivered = new Set<number>();
    let laterAttempts = 0, calls = 0, slowestCallMs = 0;
    const started = performance.now();
    const deadline = Date.now() + options.deadlineMs;
    let dead = 0;
    let finished = false;
    const caller = async () => {
      while (!finished && Date.now() < deadline) {
        const began = performance.now();
        const { jobs } = await call(`${base}/leases`, "POST", { max: 100, wait_ms: 0 }) as {
          jobs: { id: number; attempt: number }[];
        };
        calls++;
        slowestCallMs = Math.max(slowestCallMs, performance.now() - began);
        for (const job of jobs) {
          if (job.attempt !== 1) laterAttempts++;
          delivered.add(job.id);
        }
        if (jobs.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    const watch = async () => {
      while (Date.now() < deadline) {
        dead = (await call(base, "GET") as { counts: { dead: number } }).counts.dead;
        if (dead === options.jobs) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      finished = true;
    };
    await Promise.all([watch(), ...Array.from({ length: options.callers }, caller)]);
    if (dead !== options.jobs) {
      throw new Error(
        `Only ${dead} of ${options.jobs} jobs were dead after ${options.deadlineMs} ms`,
      );
    }
    return {
      jobs: options.jobs,
      delivered: delivered.size,
      dead,
      laterAttempts,
      calls,
      slowestCallMs: Math.round(slowestCallMs),
      ms: Math.round(performance.now() - started),
    };
  } finally {
    await server.close();
  }
}

if (import.meta.main) {
  const args = [...Deno.args];
  const at = args.indexOf("--db");
  const db = at >= 0 ? args.splice(at, 2)[1] : null;
  const jobs = Number(args[0] ?? 100_000);
  const dir = db === null ? await Deno.makeTempDir({ prefix: "tegami-late-claims-" }) : null;
  try {
    const figures = await runLateClaims({
      config: { db: db ?? `${dir}/t.db` },
      jobs,
      callers: 8,
      leaseMs: 100,
      slowEvery: 0,
      deadlineMs: 600_000,
    });
    console.log(JSON.stringify({ db: db === null ? "sqlite" : "postgres", ...figures }));
    if (figures.delivered !== figures.jobs) {
      console.error(`${figures.jobs - figures.delivered} jobs died without being delivered`);
      Deno.exit(1);
    }
  } finally {
    if (dir !== null) await Deno.remove(dir, { recursive: true });
  }
}
