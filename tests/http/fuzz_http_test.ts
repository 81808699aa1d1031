/**
 * Fuzzing the HTTP API with fast-check against a real server (DESIGN §8 "0 crashes and
 * 0 5xx on malformed input"). Generated requests cover every route with odd paths, methods,
 * headers and bodies: JSON text with repeated or `__proto__` keys, edge numbers, wrong types,
 * deep nesting, sizes around the limits, cut or spliced valid bodies, raw bytes, and requests
 * written byte by byte on a TCP socket. Each run asserts: no 5xx, an error body of the
 * documented shape, and the rows of a seeded job in every state byte-identical in the database.
 * Afterwards the server must be healthy.
 *
 * Deterministic: fixed seeds and bounded runs. `FUZZ_RUNS=20000 deno test -A tests/http/fuzz_http_test.ts`
 * makes a long run, `FUZZ_SEED=n` tries another seed. Counter-examples found are kept as named
 * tests in fuzz_regressions_test.ts.
 */

import fc from "fast-check";
import assert from "node:assert/strict";
import { isSqsRequest } from "../helpers/sqs_paths.ts";
import {
  assertHealthy,
  assertWellFormedAnswer,
  assertWellFormedSqsAnswer,
  brokenText,
  deepText,
  fuzzParams,
  jsonText,
  mutated,
  numberLiteral,
  objectText,
  rawExchange,
  seedJobs,
  SeedSnapshot,
  startFuzzServer,
  stopFuzzServer,
  stringLiteral,
  Tally,
} from "../helpers/fuzz.ts";
import type { TestServer } from "../helpers/test_server.ts";

const MAX_BODY = 64 * 1024;
const MAX_PAYLOAD = 8 * 1024;
const MAX_BATCH = 20;
const LIMITS = { maxBody: MAX_BODY, maxPayload: MAX_PAYLOAD, maxBatch: MAX_BATCH };

const ADMIN_FZ = "fz-admin-token-0123456789";
const PRODUCER_ALL = "fz-producer-token-0123456789";
const CONSUMER_FZC = "fz-consumer-token-0123456789";
/** Never given to the fuzzer: reads /metrics afterwards (which a queue-limited token may not). */
const OPS = "fz-ops-token-0123456789abcdef";
const TOKENS = [
  { name: "ops", token: OPS, scopes: ["admin"] },
  { name: "fz-admin", token: ADMIN_FZ, scopes: ["admin"], queues: ["fz*"] },
  { name: "fz-producer", token: PRODUCER_ALL, scopes: ["produce"] },
  { name: "fz-consumer", token: CONSUMER_FZC, scopes: ["consume"], queues: ["fz.c*"] },
];

/** One generated request. */
interface FuzzRequest {
  method: string;
  path: string;
  headers: [string, string][];
  body: string | Uint8Array<ArrayBuffer> | null;
}

/** What the generators may aim at: queue names, job ids, lease tokens. */
interface Targets {
  queues: string[];
  ids: number[];
  tokens: string[];
}

// ---- values of each field, as JSON text ----

const waitText = fc.oneof(
  fc.constantFrom("0", "-1", "60001", "0.5", "1e999", '"10"', "null", "true", "[]"),
  // A long-poll on a queue with nothing ready would wait on the test's manual clock: keep
  // generated waits invalid or zero (cut or spliced bodies may still make one; see send()).
  jsonText.filter((t) => !isPositiveWait(t)),
);

function isPositiveWait(text: string): boolean {
  const n = Number(text);
  return Number.isInteger(n) && n > 0 && n <= 60_000;
}

function fieldValue(targets: Targets): (field: string) => fc.Arbitrary<string> {
  const numeric = fc.oneof({ weight: 4, arbitrary: numberLiteral }, {
    weight: 1,
    arbitrary: jsonText,
  });
  const payloadish = fc.oneof(
    { weight: 4, arbitrary: jsonText },
    { weight: 1, arbitrary: fc.integer({ min: MAX_PAYLOAD - 4, max: MAX_PAYLOAD + 2 }) }.arbitrary
      .map((n) => JSON.stringify("p".repeat(n - 2))),
  );
  const token = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...targets.tokens).map((t) => JSON.stringify(t)) },
    { weight: 2, arbitrary: stringLiteral },
    { weight: 1, arbitrary: jsonText },
  );
  const backoff = objectText(["base_ms", "max_ms"], () => numeric, 3);
  const values = (field: string): fc.Arbitrary<string> => {
    switch (field) {
      case "payload":
      case "result":
      case "data":
        return payloadish;
      case "key":
        return fc.oneof(stringLiteral, jsonText);
      case "token":
        return token;
      case "error":
        return fc.oneof(stringLiteral, fc.constant(JSON.stringify("e".repeat(9000))), jsonText);
      case "dead":
        return fc.oneof(fc.constantFrom("true", "false", "1", '"true"'), jsonText);
      case "backoff":
        return fc.oneof(backoff, jsonText);
      case "wait_ms":
        return waitText;
      case "ids":
        return fc.oneof(
          fc.array(fc.oneof(numberLiteral, fc.constantFrom(...targets.ids).map(String)), {
            maxLength: 5,
          }).map((xs) => `[${xs.join(",")}]`),
          jsonText,
        );
      case "jobs":
        return fc.oneof(
          fc.array(jobText, { maxLength: MAX_BATCH + 2 }).map((xs) => `[${xs.join(",")}]`),
          jsonText,
        );
      default:
        return numeric;
    }
  };
  const jobText = objectText(
    ["payload", "priority", "key", "delay_ms", "run_at", "max_attempts", "lease_ms", "backoff"],
    (field) => field === "jobs" ? jsonText : values(field),
  );
  return values;
}

/** A valid value of each field (JSON text), now and then one at the edge of its range. */
function goodValue(targets: Targets): (field: string) => fc.Arbitrary<string> {
  const json = jsonText.filter((t) => {
    try {
      JSON.parse(t);
      return true;
    } catch {
      return false;
    }
  });
  const int = (min: number, max: number) => fc.integer({ min, max }).map(String);
  const good = (field: string): fc.Arbitrary<string> => {
    switch (field) {
      case "payload":
      case "result":
      case "data":
        return json;
      case "priority":
        return int(-(2 ** 31), 2 ** 31 - 1);
      case "key":
        return fc.string({ minLength: 1, maxLength: 12 }).map((k) => JSON.stringify(k));
      case "delay_ms":
        return int(0, 1_000_000);
      case "run_at":
        return int(0, 2 ** 42);
      case "max_attempts":
        return int(1, 1000);
      case "lease_ms":
        return int(100, 43_200_000);
      case "backoff":
        return fc.tuple(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 0, max: 1000 }))
          .map(([base, more]) => `{"base_ms":${base},"max_ms":${base + more}}`);
      case "max":
        return int(1, 100);
      case "wait_ms":
        return fc.constant("0");
      case "token":
        return fc.constantFrom(...targets.tokens).map((t) => JSON.stringify(t));
      case "error":
        return fc.string({ maxLength: 20 }).map((e) => JSON.stringify(e));
      case "dead":
        return fc.boolean().map(String);
      case "ids":
        return fc.array(fc.constantFrom(...targets.ids), { maxLength: 4 }).map((ids) =>
          `[${ids.join(",")}]`
        );
      default:
        return json;
    }
  };
  const edge = fieldValue(targets);
  return (field) =>
    fc.oneof({ weight: 10, arbitrary: good(field) }, { weight: 1, arbitrary: edge(field) });
}

/** The fields each route reads: required first, then optional. */
const ROUTE_FIELDS: Record<string, [string[], string[]]> = {
  enqueue: [["payload"], [
    "priority",
    "key",
    "delay_ms",
    "run_at",
    "max_attempts",
    "lease_ms",
    "backoff",
  ]],
  lease: [[], ["max", "wait_ms", "lease_ms"]],
  ack: [["token"], ["result"]],
  nack: [["token"], ["error", "delay_ms", "dead"]],
  extend: [["token"], ["lease_ms"]],
  checkpoint: [["token", "data"], []],
  requeue: [[], ["ids"]],
  other: [[], ["payload", "token", "ids"]],
};

/** An object with the route's required fields and some optional ones, mostly valid. */
function nearlyValid(route: string, targets: Targets): fc.Arbitrary<string> {
  const [required, optional] = ROUTE_FIELDS[route];
  const value = goodValue(targets);
  const one = (fields: string[]): fc.Arbitrary<string[]> =>
    fields.length === 0
      ? fc.constant([])
      : fc.tuple(...fields.map((f) => value(f).map((v) => `${JSON.stringify(f)}:${v}`)));
  const job = fc.tuple(
    one(required),
    fc.subarray(optional).chain(one),
  ).map(([a, b]) => `{${[...a, ...b].join(",")}}`);
  if (route !== "enqueue") return job;
  return fc.oneof(
    { weight: 3, arbitrary: job },
    {
      weight: 1,
      arbitrary: fc.array(job, { minLength: 1, maxLength: MAX_BATCH + 1 }).map((jobs) =>
        `{"jobs":[${jobs.join(",")}]}`
      ),
    },
  );
}

/** Bodies for a route: nearly valid ones, random objects of its fields, and junk. */
function bodyFor(
  route: string,
  targets: Targets,
): fc.Arbitrary<string | Uint8Array<ArrayBuffer>> {
  const [required, optional] = ROUTE_FIELDS[route];
  const object = objectText([...required, ...optional, "jobs"], fieldValue(targets), 8);
  const valid = nearlyValid(route, targets);
  return fc.oneof(
    { weight: 8, arbitrary: valid },
    { weight: 4, arbitrary: object },
    { weight: 2, arbitrary: mutated(valid) },
    { weight: 1, arbitrary: jsonText },
    { weight: 1, arbitrary: brokenText },
    { weight: 1, arbitrary: deepText },
    {
      weight: 1,
      arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => new Uint8Array(b)),
    },
    {
      weight: 1,
      arbitrary: fc.integer({ min: MAX_BODY - 2, max: MAX_BODY + 2 }).map((n) =>
        `{"payload":"${"b".repeat(Math.max(0, n - 14))}"}`
      ),
    },
  );
}

// ---- paths ----

function segment(values: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: values.map(encodeURIComponent) },
    {
      weight: 1,
      arbitrary: fc.constantFrom("%", "%zz", "%00", "%C0%AF", "%ED%A0%80", "%2F", "..", ".", ""),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 10 }).map(encodeURIComponent) },
  );
}

function pathArb(targets: Targets): fc.Arbitrary<string> {
  const queue = segment(fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...targets.queues) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        "constructor",
        "__proto__",
        "toString",
        "hasOwnProperty",
        "fz." + "q".repeat(125),
        "fz." + "q".repeat(126),
        "-fz",
        "fz/x",
      ),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
  ));
  const id = segment(fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...targets.ids).map(String) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(...["0", "-1", "1.5", "1e3", "0x1", " 1", "99999999999999999999"]),
    },
    { weight: 1, arbitrary: fc.integer({ min: 1 }).map(String) },
  ));
  const query = fc.array(
    fc.tuple(
      fc.constantFrom("limit", "after", "x", "limit"),
      fc.oneof(numberLiteral, fc.string({ maxLength: 6 })),
    ),
    { maxLength: 3 },
  ).map((pairs) =>
    pairs.length === 0 ? "" : "?" + pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&")
  );
  return fc.oneof(
    {
      weight: 4,
      arbitrary: fc.tuple(queue, fc.constantFrom("jobs", "jobs", "leases", "pause", "dead/requeue"))
        .map(([q, tail]) => `/v1/queues/${q}/${tail}`),
    },
    { weight: 1, arbitrary: fc.tuple(queue, query).map(([q, s]) => `/v1/queues/${q}/dead${s}`) },
    { weight: 1, arbitrary: queue.map((q) => `/v1/queues/${q}`) },
    {
      weight: 4,
      arbitrary: fc.tuple(
        id,
        fc.constantFrom("/ack", "/nack", "/extend", "/checkpoint", "/ack", "/nack", "", "", "/x"),
      )
        .map(([i, tail]) => `/v1/jobs/${i}${tail}`),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        "/v1/queues",
        "/healthz",
        "/readyz",
        "/metrics",
        "/",
        "/v1/ws",
        "/v1",
        "//",
        "/v1/queues/fz/resume",
      ),
    },
    {
      weight: 1,
      arbitrary: fc.array(segment(fc.string({ maxLength: 6 })), { maxLength: 5 })
        .map((s) => "/" + s.join("/")),
    },
  );
}

/** Which route a path aims at, to aim bodies at it. */
function routeOf(path: string): string {
  const tail = /\/(jobs|leases|ack|nack|extend|checkpoint|requeue)$/.exec(path)?.[1];
  if (tail === undefined) return "other";
  return ({ jobs: "enqueue", leases: "lease" } as Record<string, string>)[tail] ?? tail;
}

// ---- headers ----

const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant("application/json") },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      "application/json; charset=utf-8",
      "application/vnd.tegami+json",
      "APPLICATION/JSON",
      "application/json;;;",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/jsonx",
      "+json",
      "",
    ),
  },
  {
    weight: 1,
    arbitrary: fc.string({
      unit: fc.constantFrom("a", "/", ";", "+", "=", " ", "j", "s", "o", "n"),
      maxLength: 20,
    }),
  },
);

function headersArb(authorizations: fc.Arbitrary<string>): fc.Arbitrary<[string, string][]> {
  return fc.record({
    type: fc.option(contentType, { freq: 6 }),
    auth: fc.option(authorizations, { freq: 5 }),
    extra: fc.array(
      fc.tuple(
        fc.constantFrom(
          "x-fuzz",
          "accept",
          "content-encoding",
          "origin",
          "expect",
          "x-forwarded-for",
        ),
        fc.string({
          unit: fc.constantFrom("a", "0", " ", "*", "/", ",", "=", "gzip"),
          maxLength: 20,
        }),
      ),
      { maxLength: 2 },
    ),
  }).map(({ type, auth, extra }) => {
    const headers: [string, string][] = [];
    if (type !== null) headers.push(["content-type", type]);
    if (auth !== null) headers.push(["authorization", auth]);
    // fetch refuses an Expect header of its own; the raw fuzzer sends those.
    return [...headers, ...extra.filter(([name]) => name !== "expect")];
  });
}

function requestArb(
  targets: Targets,
  authorizations: fc.Arbitrary<string>,
): fc.Arbitrary<FuzzRequest> {
  return pathArb(targets).chain((path) =>
    fc.record({
      method: fc.oneof(
        { weight: 6, arbitrary: fc.constant(defaultMethod(path)) },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            "GET",
            "POST",
            "DELETE",
            "PUT",
            "PATCH",
            "HEAD",
            "OPTIONS",
            "post",
            "M-SEARCH",
          ),
        },
      ),
      path: fc.constant(path),
      headers: headersArb(authorizations),
      body: fc.option(bodyFor(routeOf(path), targets), { freq: 8 }),
    }).map((r) => {
      if (["GET", "HEAD"].includes(r.method.toUpperCase())) return { ...r, body: null };
      // fetch labels a string body text/plain; bytes go out with no Content-Type at all.
      const typed = r.headers.some(([name]) => name === "content-type");
      const body = typeof r.body === "string" && !typed ? new TextEncoder().encode(r.body) : r.body;
      return { ...r, body };
    })
  );
}

function defaultMethod(path: string): string {
  if (/^\/v1\/jobs\/[^/]*$/.test(path)) return "GET";
  if (/\/(jobs|leases|ack|nack|extend|checkpoint|pause|resume|requeue)$/.test(path)) return "POST";
  return "GET";
}

// ---- sending ----

const HANG_MS = 3000;

/**
 * Sends one request and checks the answer. A lease call whose body happens to be a valid
 * long-poll (a cut or spliced body can make one) waits on the manual clock: that is the
 * contract, not a hang, so it is aborted and accepted.
 */
async function send(
  server: TestServer,
  request: FuzzRequest,
  tally?: Tally,
  client?: Deno.HttpClient,
): Promise<number | "long-poll"> {
  const controller = new AbortController();
  let longPoll = false;
  const timer = setTimeout(() => {
    longPoll = isLongPoll(request);
    controller.abort();
  }, HANG_MS);
  try {
    const response = await fetch(server.url + request.path, {
      method: request.method,
      headers: request.headers,
      body: request.body,
      signal: controller.signal,
      client,
    });
    const text = await response.text();
    const label = `${request.method} ${request.path.slice(0, 100)} ${
      typeof request.body === "string" ? request.body.slice(0, 100) : ""
    }`;
    if (request.method.toUpperCase() === "HEAD") {
      assert.ok(response.status < 500, `${label} → ${response.status}`);
    } else if (isSqsRequest(request.method, request.path)) {
      const type = response.headers.get("content-type");
      assertWellFormedSqsAnswer(response.status, type, text, label);
    } else {
      assertWellFormedAnswer(response.status, response.headers.get("content-type"), text, label);
    }
    tally?.add(response.status);
    if (Deno.env.has("FUZZ_DEBUG")) console.log(response.status, label, text.slice(0, 120));
    return response.status;
  } catch (error) {
    if (controller.signal.aborted && longPoll) {
      tally?.add("long-poll");
      return "long-poll";
    }
    if (controller.signal.aborted) {
      throw new Error(
        `The server did not answer in ${HANG_MS} ms: ${JSON.stringify(request).slice(0, 300)}`,
      );
    }
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

function isLongPoll(request: FuzzRequest): boolean {
  if (!/\/leases$/.test(request.path) || typeof request.body !== "string") return false;
  try {
    const wait = JSON.parse(request.body)?.wait_ms;
    return Number.isInteger(wait) && wait > 0;
  } catch {
    return false;
  }
}

/** fetch refuses some generated headers before sending anything; those inputs are skipped. */
function sendable(request: FuzzRequest): boolean {
  try {
    new Request("http://x" + request.path, {
      method: request.method,
      headers: request.headers,
      body: request.body,
    });
    return true;
  } catch {
    return false;
  }
}

// ---- servers ----

/** Leases a job of `queue` so generated calls may present a real token. */
async function leasedIn(server: TestServer, queue: string, headers: HeadersInit = {}) {
  const enq = await server.request("POST", `/v1/queues/${queue}/jobs`, { payload: "x" }, headers);
  assert.equal(enq.status, 201, JSON.stringify(enq.body));
  const leased = await server.request("POST", `/v1/queues/${queue}/leases`, {
    lease_ms: 12 * 3600_000,
  }, headers);
  return { id: enq.body.id as number, token: leased.body.jobs[0].lease.token as string };
}

/** True when a request names the seed queue or a seed job (auth off: those could be valid). */
function touchesSeed(request: FuzzRequest, seedIds: number[]): boolean {
  const segments = request.path.split("?")[0].split("/").map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  });
  return segments.includes("seed") || segments.some((s) => seedIds.includes(Number(s)));
}

async function noFiveHundreds(server: TestServer, headers: HeadersInit = {}): Promise<void> {
  const metrics = await server.request("GET", "/metrics", undefined, headers);
  assert.equal(metrics.status, 200);
  assert.doesNotMatch(metrics.body, /status="5\d\d"/, "no 5xx was ever answered");
}

// ---- properties ----

Deno.test("fuzzed HTTP requests with auth on get no 5xx and never touch another queue's jobs", async () => {
  const server = await startFuzzServer(LIMITS, TOKENS);
  try {
    const admin = { authorization: `Bearer ${ADMIN_FZ}` };
    const seed = await seedJobs(server);
    const own = await leasedIn(server, "fz", admin);
    using snapshot = new SeedSnapshot(server.dbPath, seed.ids);
    const before = snapshot.read();
    const targets: Targets = {
      queues: ["fz", "fz", "fz.c", "fz.cx", "seed", "other"],
      ids: [...seed.ids, own.id, 999_999],
      tokens: [seed.leaseToken, own.token, "AAAAAAAAAAAAAAAAAAAAAA"],
    };
    const authorizations = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.constantFrom(ADMIN_FZ, ADMIN_FZ, PRODUCER_ALL, CONSUMER_FZC).map((t) =>
          `Bearer ${t}`
        ),
      },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          "Bearer",
          "Bearer ",
          `bearer  ${ADMIN_FZ}  `,
          `Bearer ${ADMIN_FZ}x`,
          `Bearer ${ADMIN_FZ.slice(0, -1)}`,
          `Basic ${btoa(`u:${ADMIN_FZ}`)}`,
          ADMIN_FZ,
          `Bearer ${seed.leaseToken}`,
        ),
      },
      { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
    );
    const tally = new Tally();
    await fc.assert(
      fc.asyncProperty(requestArb(targets, authorizations), async (request) => {
        fc.pre(sendable(request));
        await send(server, request, tally);
        assert.equal(snapshot.read(), before, "a seeded job's stored row changed");
      }),
      fuzzParams(1000, 0x7e6a31),
    );
    tally.report("HTTP fuzz, auth on");
    tally.assertSaw([200, 201, 400, 401, 403, 404, 409, 413, 415], "HTTP fuzz, auth on");
    await assertHealthy(server, admin);
    await noFiveHundreds(server, { authorization: `Bearer ${OPS}` });
    assert.equal(snapshot.read(), before);
  } finally {
    await stopFuzzServer(server);
  }
});

Deno.test("fuzzed HTTP requests with auth off get no 5xx and leave stored jobs intact", async () => {
  const server = await startFuzzServer(LIMITS, null);
  try {
    const seed = await seedJobs(server);
    const own = await leasedIn(server, "fz");
    using snapshot = new SeedSnapshot(server.dbPath, seed.ids);
    const before = snapshot.read();
    const targets: Targets = {
      queues: ["fz", "fz.a", "other"],
      ids: [own.id, own.id + 1, 999_999],
      tokens: [own.token, "AAAAAAAAAAAAAAAAAAAAAA"],
    };
    const authorizations = fc.oneof(
      fc.constant("Bearer anything-at-all-0123"),
      fc.string({ maxLength: 20 }),
    );
    const tally = new Tally();
    await fc.assert(
      fc.asyncProperty(requestArb(targets, authorizations), async (request) => {
        fc.pre(sendable(request) && !touchesSeed(request, seed.ids));
        await send(server, request, tally);
        assert.equal(snapshot.read(), before, "a seeded job's stored row changed");
      }),
      fuzzParams(1000, 0x51a2c4),
    );
    tally.report("HTTP fuzz, auth off");
    tally.assertSaw([200, 201, 400, 404, 409, 413, 415], "HTTP fuzz, auth off");
    await assertHealthy(server);
    await noFiveHundreds(server);
    assert.equal(snapshot.read(), before);
    for (const id of seed.ids) {
      assert.equal((await server.request("GET", `/v1/jobs/${id}`)).status, 200);
    }
  } finally {
    await stopFuzzServer(server);
  }
});

Deno.test("fuzzed HTTP/2 requests (h2c) get no 5xx and never touch another queue's jobs", async () => {
  // Deno.serve also speaks HTTP/2 over cleartext to a client that knows it (prior knowledge).
  const server = await startFuzzServer(LIMITS, TOKENS);
  using client = Deno.createHttpClient({ http1: false, http2: true });
  try {
    const seed = await seedJobs(server);
    const own = await leasedIn(server, "fz", { authorization: `Bearer ${ADMIN_FZ}` });
    using snapshot = new SeedSnapshot(server.dbPath, seed.ids);
    const before = snapshot.read();
    const targets: Targets = {
      queues: ["fz", "fz", "fz.c", "seed", "other"],
      ids: [...seed.ids, own.id, 999_999],
      tokens: [seed.leaseToken, own.token, "AAAAAAAAAAAAAAAAAAAAAA"],
    };
    const authorizations = fc.oneof(
      fc.constantFrom(ADMIN_FZ, PRODUCER_ALL, CONSUMER_FZC).map((t) => `Bearer ${t}`),
      fc.string({ maxLength: 30 }),
    );
    const tally = new Tally();
    await fc.assert(
      fc.asyncProperty(requestArb(targets, authorizations), async (request) => {
        fc.pre(sendable(request));
        await send(server, request, tally, client);
        assert.equal(snapshot.read(), before, "a seeded job's stored row changed");
      }),
      fuzzParams(300, 0x4f2c2c),
    );
    tally.report("HTTP/2 fuzz, auth on");
    tally.assertSaw([200, 400, 401, 403, 404], "HTTP/2 fuzz");
    await noFiveHundreds(server, { authorization: `Bearer ${OPS}` });
    assert.equal(snapshot.read(), before);
  } finally {
    await stopFuzzServer(server);
  }
});

// ---- raw bytes on the socket ----

const CRLF = fc.constantFrom("\r\n", "\r\n", "\n", "\r");

const rawHeader: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "Host: x",
    "Host: a b",
    "Host: [::1",
    "Host: x:99999",
    "Host:",
    "Content-Length: 13",
    "Content-Length: 0",
    "Content-Length: -1",
    "Content-Length: abc",
    "Content-Length: 99999999999999999999",
    "Content-Length: 13, 13",
    "Transfer-Encoding: chunked",
    "Transfer-Encoding: gzip, chunked",
    "Transfer-Encoding: identity",
    "Content-Type: application/json",
    "Content-Type: text/plain",
    "Expect: 100-continue",
    "Expect: 200-ok",
    "Connection: close",
    "Connection: upgrade",
    "Upgrade: websocket",
    "Upgrade: h2c",
    "Sec-WebSocket-Version: 13",
    "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==",
    "Origin: http://evil.example",
    `Authorization: Bearer ${ADMIN_FZ}`,
    "Authorization: Bearer \u0001",
    " folded: line",
    "NoColon",
    ": empty name",
    "X-Nul: a\u0000b",
  ),
  fc.tuple(
    fc.string({ unit: fc.constantFrom("a", "-", "X", ":", " ", "\t", "\u00ff"), maxLength: 12 }),
    fc.string({ unit: "binary-ascii", maxLength: 30 }),
  ).map(([name, value]) => `${name}: ${value}`),
);

const rawRequest: fc.Arbitrary<Uint8Array<ArrayBuffer>> = fc.record({
  method: fc.oneof(
    fc.constantFrom(
      "GET",
      "POST",
      "DELETE",
      "PUT",
      "HEAD",
      "OPTIONS",
      "CONNECT",
      "TRACE",
      "get",
      "",
    ),
    fc.string({ unit: "binary-ascii", maxLength: 8 }),
  ),
  target: fc.oneof(
    fc.constantFrom(
      "/v1/queues/fz/jobs",
      "/v1/queues/seed/jobs",
      "/v1/jobs/1/ack",
      "/v1/queues",
      "/healthz",
      "/v1/ws",
      "*",
      "http://127.0.0.1/v1/queues",
      "/v1/queues/fz/jobs?x=%",
      "/../../etc/passwd",
      "/%00",
    ),
    fc.string({ unit: "binary-ascii", maxLength: 30 }),
    fc.nat(9000).map((n) => "/" + "a".repeat(n)),
  ),
  version: fc.constantFrom(
    "HTTP/1.1",
    "HTTP/1.1",
    "HTTP/1.0",
    "HTTP/2.0",
    "HTTP/1.1 x",
    "http/1.1",
    "",
  ),
  newline: CRLF,
  headers: fc.array(rawHeader, { maxLength: 6 }),
  body: fc.oneof(
    fc.constant(""),
    fc.constantFrom(
      '{"payload":1}',
      '5\r\n{"pay\r\n',
      "zz\r\n{}\r\n0\r\n\r\n",
      "0\r\n\r\n",
      '{"jobs":[{"payload":1}]}',
    ),
    jsonText,
    fc.string({ unit: "binary", maxLength: 50 }),
  ),
}).map(({ method, target, version, newline, headers, body }) => {
  const line = [method, target, version].filter((p) => p !== "").join(" ");
  return new TextEncoder().encode(
    line + newline + headers.map((h) => h + newline).join("") + newline + body,
  );
});

/** A WebSocket handshake with some of its headers missing, wrong or doubled. */
const rawUpgrade: fc.Arbitrary<Uint8Array<ArrayBuffer>> = fc.record({
  method: fc.constantFrom("GET", "GET", "GET", "POST", "HEAD"),
  target: fc.constantFrom("/v1/ws", "/v1/ws", "/v1/ws?x=1", "/v1/ws/", "/v1/queues"),
  version: fc.constantFrom("HTTP/1.1", "HTTP/1.1", "HTTP/1.0"),
  upgrade: fc.option(fc.constantFrom("websocket", "WebSocket", "websocket, h2c", "h2c", "")),
  connection: fc.option(
    fc.constantFrom("Upgrade", "upgrade", "keep-alive, Upgrade", "keep-alive", "close", ""),
  ),
  key: fc.option(fc.constantFrom("AAAAAAAAAAAAAAAAAAAAAA==", "abc", "", "!!!!", "A".repeat(300))),
  wsVersion: fc.option(fc.constantFrom("13", "8", "", "13, 8", "x")),
  origin: fc.option(fc.constantFrom("http://evil.example", "null", "http://x")),
  auth: fc.option(fc.constantFrom(`Bearer ${ADMIN_FZ}`, "Bearer nope-nope-nope-nope", "Basic x")),
  body: fc.constantFrom("", "Content-Length: 5\r\n\r\nhello"),
}).map((r) => {
  const lines = [`${r.method} ${r.target} ${r.version}`, "Host: x"];
  if (r.upgrade !== null) lines.push(`Upgrade: ${r.upgrade}`);
  if (r.connection !== null) lines.push(`Connection: ${r.connection}`);
  if (r.key !== null) lines.push(`Sec-WebSocket-Key: ${r.key}`);
  if (r.wsVersion !== null) lines.push(`Sec-WebSocket-Version: ${r.wsVersion}`);
  if (r.origin !== null) lines.push(`Origin: ${r.origin}`);
  if (r.auth !== null) lines.push(`Authorization: ${r.auth}`);
  const tail = r.body === "" ? "\r\n" : r.body;
  return new TextEncoder().encode(lines.join("\r\n") + "\r\n" + tail);
});

Deno.test("fuzzed raw HTTP/1.1 bytes get an answer or a close, never a 5xx or a hang", async () => {
  const server = await startFuzzServer(LIMITS, TOKENS);
  try {
    const seed = await seedJobs(server);
    using snapshot = new SeedSnapshot(server.dbPath, seed.ids);
    const before = snapshot.read();
    const tally = new Tally();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof({ weight: 4, arbitrary: rawRequest }, rawUpgrade),
        async (bytes) => {
          const text = new TextDecoder().decode(bytes);
          // A valid long-poll written raw would wait on the manual clock: not a hang.
          fc.pre(!text.includes("wait_ms"));
          const answer = await rawExchange(server.server.port, bytes);
          assert.ok(
            !answer.timedOut,
            `no answer and no close for ${JSON.stringify(text.slice(0, 200))}`,
          );
          tally.add(answer.statuses.length === 0 ? "closed" : answer.statuses.join("+"));
          for (const status of answer.statuses) {
            assert.ok(
              status < 500,
              `${JSON.stringify(text.slice(0, 200))} → ${status}\n${answer.text.slice(0, 300)}`,
            );
          }
          assert.equal(snapshot.read(), before, "a seeded job's stored row changed");
        },
      ),
      fuzzParams(300, 0x2b7f19),
    );
    tally.report("raw HTTP fuzz");
    // The bytes reached the parser, the auth check and the router, not just a closed socket.
    tally.assertSaw([400, 401, 404], "raw HTTP fuzz");
    await assertHealthy(server, { authorization: `Bearer ${ADMIN_FZ}` });
    await noFiveHundreds(server, { authorization: `Bearer ${OPS}` });
  } finally {
    await stopFuzzServer(server);
  }
});

// ---- valid requests with odd content: stored exactly as sent ----

const payloadText = jsonText.filter((t) => {
  try {
    JSON.parse(t);
    return t.length < MAX_PAYLOAD;
  } catch {
    return false;
  }
});

const keyValue = fc.oneof(
  fc.string({ minLength: 1, maxLength: 20 }),
  fc.string({ unit: "binary", minLength: 1, maxLength: 20 }),
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 10 }),
  fc.constantFrom("k".repeat(512), "€".repeat(170), "\u0000", "a\u0000b", "\ud800", "__proto__"),
);

const errorValue = fc.oneof(
  fc.string({ unit: "binary", maxLength: 30 }),
  fc.constantFrom("a\u0000b", "\ud800x", "x".repeat(8191) + "\ud83d\ude00", "€".repeat(9000)),
);

/** What a nack's error reads back as: cut at 8192 characters, NUL and lone surrogates U+FFFD. */
function storedError(error: string): string {
  const cut = error.length > 8192 ? error.slice(0, 8192) + "…[cut]" : error;
  return cut.replaceAll("\u0000", "\uFFFD").toWellFormed();
}

Deno.test("valid calls with any payload, key, checkpoint, error and result store them exactly", async () => {
  const server = await startFuzzServer(LIMITS, null);
  try {
    let n = 0;
    let roundTrips = 0;
    const post = async (path: string, body: string) => {
      const response = await fetch(server.url + path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      return { status: response.status, body: await response.json() };
    };
    await fc.assert(
      fc.asyncProperty(
        payloadText,
        fc.option(keyValue),
        payloadText,
        errorValue,
        payloadText,
        async (payload, key, data, error, result) => {
          const queue = `fz.rt.${n++}`;
          const keyPart = key === null ? "" : `,"key":${JSON.stringify(key)}`;
          const enq = await post(`/v1/queues/${queue}/jobs`, `{"payload":${payload}${keyPart}}`);
          const normal = (text: string) => JSON.stringify(JSON.parse(text));
          if (enq.status !== 201) {
            // Only a key the store cannot keep exactly may be refused, and only with a 400.
            assert.equal(enq.status, 400, `${payload} ${key} → ${JSON.stringify(enq.body)}`);
            assert.equal(enq.body.error.code, "validation_failed");
            assert.match(enq.body.error.message, /"key"/);
            assert.ok(!key!.isWellFormed() || key!.includes("\u0000"), "a good key refused");
            return;
          }
          const id = enq.body.id;
          const job = await server.request("GET", `/v1/jobs/${id}`);
          assert.equal(JSON.stringify(job.body.payload), normal(payload), "payload as stored");
          assert.equal(job.body.key, key, "key as stored");
          let lease = (await server.request("POST", `/v1/queues/${queue}/leases`, {})).body.jobs[0];
          assert.equal(JSON.stringify(lease.payload), normal(payload), "payload as delivered");
          assert.equal(lease.key, key, "key as delivered");
          const token = JSON.stringify(lease.lease.token);
          assert.equal(
            (await post(`/v1/jobs/${id}/checkpoint`, `{"token":${token},"data":${data}}`)).status,
            200,
          );
          const nack = await post(
            `/v1/jobs/${id}/nack`,
            `{"token":${token},"error":${JSON.stringify(error)},"delay_ms":0}`,
          );
          assert.equal(nack.status, 200, JSON.stringify(nack.body));
          const failed = (await server.request("GET", `/v1/jobs/${id}`)).body;
          assert.equal(failed.last_error, storedError(error), "error as stored");
          assert.equal(JSON.stringify(failed.checkpoint), normal(data), "checkpoint as stored");
          lease = (await server.request("POST", `/v1/queues/${queue}/leases`, {})).body.jobs[0];
          assert.equal(JSON.stringify(lease.checkpoint), normal(data), "checkpoint as delivered");
          const ackBody = `{"token":${JSON.stringify(lease.lease.token)},"result":${result}}`;
          assert.equal((await post(`/v1/jobs/${id}/ack`, ackBody)).status, 200);
          const done = (await server.request("GET", `/v1/jobs/${id}`)).body;
          assert.equal(JSON.stringify(done.result), normal(result), "result as stored");
          roundTrips++;
        },
      ),
      fuzzParams(120, 0x3c9e07),
    );
    // A run where every enqueue was refused would check nothing above: most must go through.
    assert.ok(roundTrips * 2 > n, `only ${roundTrips} of ${n} jobs made the whole round trip`);
    await assertHealthy(server);
  } finally {
    await stopFuzzServer(server);
  }
});
