/**
 * Shared pieces of the fuzz suites (`fuzz_*_test.ts` in tests/api, http and ws): run settings, input generators for
 * JSON text that `JSON.stringify` would never write (duplicate keys, own `__proto__` keys, lone
 * surrogates, `1e999`, deep nesting), a set of jobs in every state whose stored rows must never
 * change, and a raw HTTP exchange with a deadline.
 *
 * Runs are deterministic: every property has a fixed seed and a bounded number of runs, so
 * `deno task test` sees the same inputs every time. `FUZZ_RUNS=5000` runs each property that
 * many times instead (and prints what the answers were); `FUZZ_SEED=n` replays another seed
 * (printed by a failure); `FUZZ_DEBUG=1` prints every input with its answer.
 *
 * @module
 */

import fc from "fast-check";
import { DatabaseSync } from "node:sqlite";
import assert from "node:assert/strict";
import { STATUS_OF } from "../../lib/core/errors.ts";
import type { NewJob } from "../../lib/core/job.ts";
import type { ServeConfig } from "../../lib/config/serve_config.ts";
import { newJob } from "./new_job.ts";
import { startTestServer, type TestServer } from "./test_server.ts";

/** The fast-check parameters of one property: a fixed seed, bounded runs, env overrides. */
export function fuzzParams(defaultRuns: number, defaultSeed: number): fc.Parameters<unknown> {
  const runs = Number(Deno.env.get("FUZZ_RUNS") ?? "");
  const seedText = Deno.env.get("FUZZ_SEED") ?? "";
  const seed = Number(seedText);
  return {
    numRuns: Number.isSafeInteger(runs) && runs > 0 ? runs : defaultRuns,
    seed: seedText !== "" && Number.isSafeInteger(seed) ? seed : defaultSeed,
    // Inputs skipped by fc.pre (ones the run cannot send) are few; this bounds them anyway.
    maxSkipsPerRun: 1000,
  };
}

/** Counts outcomes (status or error code) so a run can show it reached every kind of answer. */
export class Tally {
  readonly counts = new Map<string, number>();

  /** Counts one outcome. */
  add(outcome: string | number): void {
    const key = String(outcome);
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  /** Asserts every outcome in `expected` was seen at least once. */
  assertSaw(expected: readonly (string | number)[], what: string): void {
    const missing = expected.filter((e) => !this.counts.has(String(e)));
    assert.deepEqual(missing, [], `${what}: never answered ${missing.join(", ")}; saw ${this}`);
  }

  /** `outcome×count, …`, most frequent first. */
  toString(): string {
    return [...this.counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}×${n}`).join(", ");
  }

  /** Prints the tally when a long run was asked for (FUZZ_RUNS), for the record. */
  report(what: string): void {
    if (Deno.env.has("FUZZ_RUNS")) console.log(`${what}: ${this}`);
  }
}

// ---- JSON text ----

/** The optional fields of a job to enqueue (over HTTP or in an `enqueue` frame). */
export const JOB_OPTIONS = [
  "priority",
  "key",
  "delay_ms",
  "run_at",
  "max_attempts",
  "lease_ms",
  "backoff",
] as const;

/** Field names of every request body and frame, so generated objects reach the parsers. */
export const FIELD_NAMES = [
  "payload",
  ...JOB_OPTIONS,
  "base_ms",
  "max_ms",
  "jobs",
  "max",
  "wait_ms",
  "token",
  "result",
  "error",
  "dead",
  "data",
  "ids",
  "op",
  "ref",
  "id",
  "queue",
  "prefetch",
] as const;

/** Keys that trip naive object handling in JavaScript. */
export const HOSTILE_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "valueOf",
  "hasOwnProperty",
  "__defineGetter__",
  "then",
  "",
  "\u0000",
  "payload ",
  "PAYLOAD",
  "a".repeat(300),
] as const;

/** Numbers at and around every limit, and the ones JSON and JavaScript disagree on. */
export const EDGE_NUMBERS = [
  "0",
  "-0",
  "1",
  "-1",
  "0.5",
  "1.0",
  "1e0",
  "99",
  "100",
  "101",
  "127",
  "128",
  "129",
  "511",
  "512",
  "513",
  "999",
  "1000",
  "1001",
  "59999",
  "60000",
  "60001",
  "43199999",
  "43200000",
  "43200001",
  "2147483647",
  "2147483648",
  "-2147483648",
  "-2147483649",
  "9007199254740991",
  "9007199254740992",
  "9007199254740993",
  "-9007199254740993",
  "1e21",
  "1e308",
  "-1e308",
  "1e999",
  "-1e999",
  "5e-324",
  "1E400",
  "0.1e1",
  "123456789012345678901234567890",
] as const;

/** Text that is not JSON at all, or almost JSON. */
const BROKEN_TEXT = [
  "",
  " ",
  "{",
  "}",
  "[",
  "{,}",
  '{"a"}',
  '{"a":}',
  "[1,]",
  "01",
  "+1",
  ".5",
  "NaN",
  "Infinity",
  "undefined",
  "nul",
  "tru",
  "'x'",
  '"unterminated',
  '"\\x41"',
  '"\\u12"',
  "\uFEFF{}",
  "{}{}",
  "/* c */ {}",
] as const;

/** A JSON string literal of any text, lone surrogates and control characters included. */
export const stringLiteral: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.string({ unit: fc.constantFrom("\u0000", "\ud800", "\udfff", "\u2028", "\uFFFF", "€", "x") }),
  fc.constantFrom("", "fz", "seed", "a".repeat(129), "k".repeat(513), "€".repeat(171)),
).map((s) => JSON.stringify(s));

/** A JSON number literal, mostly at edges. */
export const numberLiteral: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...EDGE_NUMBERS) },
  { weight: 1, arbitrary: fc.integer().map(String) },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }).map(String) },
);

/** An object key: a real field name most of the time, else hostile or random. */
export const keyArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...FIELD_NAMES) },
  { weight: 2, arbitrary: fc.constantFrom(...HOSTILE_KEYS) },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);

/** A scalar as JSON text. */
const scalarLiteral: fc.Arbitrary<string> = fc.oneof(
  numberLiteral,
  stringLiteral,
  fc.constantFrom("true", "false", "null"),
);

/**
 * JSON text of any shape, written by hand so objects may repeat a key or own a `__proto__`
 * key, which `JSON.stringify` of a JavaScript object never produces.
 */
export const jsonText: fc.Arbitrary<string> = fc.letrec<{
  value: string;
  array: string;
  object: string;
}>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    scalarLiteral,
    tie("array"),
    tie("object"),
  ),
  array: fc.array(tie("value"), { maxLength: 4 }).map((items) => `[${items.join(",")}]`),
  object: fc.array(fc.tuple(keyArb, tie("value")), { maxLength: 5 }).map((entries) =>
    `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`
  ),
})).value;

/** An object's JSON text whose keys come mostly from `fields`, with values from `values`. */
export function objectText(
  fields: readonly string[],
  values: (field: string) => fc.Arbitrary<string>,
  maxKeys = 6,
): fc.Arbitrary<string> {
  const entry = fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...fields) },
    { weight: 1, arbitrary: keyArb },
  ).chain((field) => fc.tuple(fc.constant(field), values(field)));
  return fc.array(entry, { maxLength: maxKeys }).map((entries) =>
    `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`
  );
}

/** `n` nested arrays or objects, closed or not, around `inner`. */
export const deepText: fc.Arbitrary<string> = fc.record({
  depth: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1000, max: 60_000 })),
  kind: fc.constantFrom("array", "object", "mixed"),
  closed: fc.boolean(),
  wrap: fc.constantFrom("", "payload", "jobs", "data", "result", "key", "backoff"),
}).map(({ depth, kind, closed, wrap }) => {
  const open = kind === "array" ? "[" : kind === "object" ? '{"a":' : '[{"a":';
  const close = kind === "array" ? "]" : kind === "object" ? "}" : "}]";
  const steps = kind === "mixed" ? Math.ceil(depth / 2) : depth;
  const inner = open.repeat(steps) + "1" + (closed ? close.repeat(steps) : "");
  return wrap === "" ? inner : `{"${wrap}":${inner}}`;
});

/** Mutations of valid text: cut, spliced with junk, or doubled. */
export function mutated(base: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.tuple(
    base,
    fc.nat(),
    fc.oneof(stringLiteral, fc.constantFrom(...BROKEN_TEXT)),
    fc.nat(3),
  )
    .map(([text, at, junk, how]) => {
      const i = text.length === 0 ? 0 : at % text.length;
      switch (how) {
        case 0:
          return text.slice(0, i);
        case 1:
          return text.slice(0, i) + junk + text.slice(i);
        case 2:
          return text.slice(0, i) + text.slice(i + 1);
        default:
          return text + text;
      }
    });
}

/** Text that is broken JSON, or not JSON at all. */
export const brokenText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...BROKEN_TEXT),
  fc.string({ unit: "binary", maxLength: 40 }),
);

// ---- servers ----

/** Starts a test server with `config`; with `tokens`, auth is on with those tokens. */
export function startFuzzServer(
  config: Partial<ServeConfig>,
  tokens: readonly Record<string, unknown>[] | null,
): Promise<TestServer> {
  return startTestServer({ config, tokens: tokens ?? undefined });
}

/** Stops a server of {@linkcode startFuzzServer} (as `await using` does). */
export async function stopFuzzServer(server: TestServer): Promise<void> {
  await server[Symbol.asyncDispose]();
}

// ---- seeded jobs that must never change ----

/** Jobs in every state, in queue "seed", enqueued directly through the broker. */
export interface SeedJobs {
  /** Their ids, in state order: pending, delayed, leased, dead, done, cancelled. */
  ids: number[];
  /** The lease token of the leased one (a fuzzer may present it; it must not help). */
  leaseToken: string;
}

/** Seeds queue "seed" with a job in every state, with an odd payload each. */
export async function seedJobs(server: TestServer): Promise<SeedJobs> {
  const broker = server.server.broker;
  const now = server.clock.now();
  // Payloads are JSON text as stored; some are text JSON.stringify would never write.
  const job = (payload: string, more: Partial<NewJob> = {}) => newJob(payload, now, more);
  const take = async (priority: number) => {
    const [delivery] = await broker.lease("seed", 1, 0, 12 * 3600_000);
    assert.equal(delivery.job.priority, priority, "the seed job leased is the one expected");
    return delivery;
  };
  // Each job is leased right after its enqueue, so which one a lease takes is never in doubt.
  const [dead] = await broker.enqueue("seed", [
    job('{"__proto__":{"dead":1},"constructor":null}', { priority: 3, max_attempts: 1 }),
  ]);
  await broker.nack(dead.id, (await take(3)).lease.token, {
    error: "seed failure",
    delay_ms: null,
    dead: true,
  });
  const [done] = await broker.enqueue("seed", [job('["done","\u2028",1e300]', { priority: 2 })]);
  await broker.ack(done.id, (await take(2)).lease.token, '{"ok":true}');
  const [leased] = await broker.enqueue("seed", [job('{"deep":[[[["x"]]]]}', { priority: 1 })]);
  const lease = await take(1);
  await broker.checkpoint(leased.id, lease.lease.token, '{"step":"seeded"}');
  const [cancelled] = await broker.enqueue("seed", [job('"to cancel"')]);
  await broker.cancel(cancelled.id);
  // Valid JSON text only, as the API stores nothing else (a raw NUL inside a string is not JSON;
  // the escape is): answers must stay valid JSON, and api_schemas.ts parses every one.
  const [pending] = await broker.enqueue("seed", [
    job('"pending \\u0000 job"', { key: "seed-key" }),
  ]);
  const [delayed] = await broker.enqueue("seed", [
    job('{"later":true}', { run_at: now + 50 * 365 * 86_400_000 }),
  ]);
  return {
    ids: [pending.id, delayed.id, leased.id, dead.id, done.id, cancelled.id],
    leaseToken: lease.lease.token,
  };
}

/**
 * Reads the stored rows of the seeded jobs (every column, as SQLite holds them) and the seed
 * queue's row, over a second, read-only connection: the fuzzers compare this text before and
 * after, so "intact" means byte-identical in the database itself.
 */
export class SeedSnapshot implements Disposable {
  readonly #db: DatabaseSync;
  readonly #ids: number[];

  constructor(dbPath: string, ids: number[]) {
    this.#db = new DatabaseSync(dbPath, { readOnly: true });
    this.#ids = ids;
  }

  /** The rows as one text. */
  read(): string {
    const rows = this.#db.prepare(
      `SELECT * FROM jobs WHERE id IN (${this.#ids.join(",")}) ORDER BY id`,
    ).all();
    const queue = this.#db.prepare("SELECT * FROM queues WHERE name = 'seed'").all();
    assert.equal(rows.length, this.#ids.length, "every seeded job is still stored");
    return JSON.stringify({ rows, queue });
  }

  [Symbol.dispose](): void {
    this.#db.close();
  }
}

/** Asserts an SQS answer is not 5xx and, when an error, is AWS's: XML or JSON with its code. */
export function assertWellFormedSqsAnswer(
  status: number,
  contentType: string | null,
  text: string,
  label: string,
): void {
  assert.ok(status < 500, `${label} → ${status} ${text.slice(0, 300)}`);
  if (status < 400) return;
  if ((contentType ?? "").startsWith("text/xml")) {
    assert.match(
      text,
      /<ErrorResponse[^>]*><Error><Type>Sender<\/Type><Code>[A-Za-z.]+<\/Code>/,
      label,
    );
    return;
  }
  assert.match(contentType ?? "", /^application\/x-amz-json-1\.0/, `${label}: ${status}`);
  assert.equal(typeof JSON.parse(text).__type, "string", label);
}

/** Asserts a whole-server answer is not 5xx and, when an error, has the documented shape. */
export function assertWellFormedAnswer(
  status: number,
  contentType: string | null,
  text: string,
  label: string,
): void {
  assert.ok(status < 500, `${label} → ${status} ${text.slice(0, 300)}`);
  if (status < 400) return;
  assert.match(contentType ?? "", /^application\/json/, `${label}: ${status} not JSON`);
  const body = JSON.parse(text);
  assert.deepEqual(Object.keys(body), ["error"], label);
  assert.deepEqual(Object.keys(body.error).sort(), ["code", "message"], label);
  const code = body.error.code as keyof typeof STATUS_OF;
  assert.equal(STATUS_OF[code], status, `${label}: code ${code} with status ${status}`);
}

/** What came back over a raw connection. */
export interface RawExchange {
  /** Every status line's code, in order (one per answer; none if the server just closed). */
  statuses: number[];
  /** All text read. */
  text: string;
}

/**
 * Writes `bytes` on a fresh TCP connection, half-closes it, and reads until the server closes
 * or `timeoutMs` passes (a server that hangs on a malformed request fails the caller).
 */
export async function rawExchange(
  port: number,
  bytes: Uint8Array,
  timeoutMs = 3000,
): Promise<RawExchange & { timedOut: boolean }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const timer = setTimeout(() => {
    try {
      conn.close();
    } catch {
      // already closed
    }
  }, timeoutMs);
  let timedOut = false;
  let text = "";
  const started = Date.now();
  try {
    try {
      let at = 0;
      while (at < bytes.length) at += await conn.write(bytes.subarray(at));
      await conn.closeWrite();
    } catch {
      // The server may close before reading everything (a head over its limits): fine.
    }
    const buffer = new Uint8Array(64 * 1024);
    const decoder = new TextDecoder();
    for (;;) {
      let n: number | null;
      try {
        n = await conn.read(buffer);
      } catch {
        n = null;
      }
      if (n === null) break;
      text += decoder.decode(buffer.subarray(0, n), { stream: true });
    }
  } finally {
    clearTimeout(timer);
    timedOut = Date.now() - started >= timeoutMs;
    try {
      conn.close();
    } catch {
      // closed by the timer or the server
    }
  }
  const statuses = [...text.matchAll(/^HTTP\/1\.[01] (\d{3})/gm)].map((m) => Number(m[1]));
  return { statuses, text, timedOut };
}

/** The server still answers: health, readiness, and a job's whole round trip. */
export async function assertHealthy(
  server: TestServer,
  headers: HeadersInit = {},
): Promise<void> {
  assert.deepEqual((await server.request("GET", "/healthz")).body, { status: "ok" });
  assert.deepEqual((await server.request("GET", "/readyz")).body, { status: "ready" });
  const queue = `fz.health.${crypto.randomUUID().slice(0, 8)}`;
  const enq = await server.request("POST", `/v1/queues/${queue}/jobs`, { payload: 42 }, headers);
  assert.equal(enq.status, 201, JSON.stringify(enq.body));
  const leased = await server.request("POST", `/v1/queues/${queue}/leases`, {}, headers);
  assert.equal(leased.body.jobs[0].payload, 42);
  const ack = await server.request("POST", `/v1/jobs/${enq.body.id}/ack`, {
    token: leased.body.jobs[0].lease.token,
  }, headers);
  assert.equal(ack.status, 200, JSON.stringify(ack.body));
}
