/**
 * Waiting for a result over HTTP (docs/api.md, "Waiting for a result"): `GET /v1/jobs/{id}?wait_ms`
 * and `POST /v1/queues/{queue}/jobs?wait_ms`, on a real server with SQLite and PostgreSQL: the
 * answer comes when the job ends, or with its state when the time runs out; on PostgreSQL, an end
 * made through another server is heard too.
 */

import assert from "node:assert/strict";
import type { ServeConfig } from "../../lib/config/serve_config.ts";
import { ManualClock } from "../../lib/core/clock.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";
import { type Answer, settle, startTestServer, type TestServer } from "../helpers/test_server.ts";

const pg = await pgTestDatabase();

const STORES: { name: string; config: () => Partial<ServeConfig>; ignore: boolean }[] = [
  { name: "sqlite", config: () => ({}), ignore: false },
  { name: "postgres", config: () => pgServerConfig(pg!, pg!.schema()), ignore: pg === null },
];

// deno-lint-ignore no-explicit-any
type Json = any;

function ok(answer: Answer, status: number): Json {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  return answer.body;
}

/** Leases one job of `queue`, waiting for it to be there. */
async function leaseOne(server: TestServer, queue: string): Promise<Json> {
  for (let i = 0; i < 100; i++) {
    const body = ok(await server.request("POST", `/v1/queues/${queue}/leases`, { max: 1 }), 200);
    if (body.jobs.length > 0) return body.jobs[0];
    await settle();
  }
  throw new Error(`no job in ${queue}`);
}

/** A manual clock that tells when a timer of a given length is set (a wait has begun). */
class WatchedClock extends ManualClock {
  readonly #lengths: number[] = [];

  override setTimer(fn: () => void, ms: number) {
    this.#lengths.push(ms);
    return super.setTimer(fn, ms);
  }

  /** Resolves once a timer of `ms` has been set. */
  async timerSet(ms: number): Promise<void> {
    for (let i = 0; i < 1000 && !this.#lengths.includes(ms); i++) await settle(1);
    assert.ok(this.#lengths.includes(ms), `no timer of ${ms} ms was set`);
  }
}

/** A request in flight, and whether it has answered yet. */
function inFlight(answer: Promise<Answer>): { answer: Promise<Answer>; done: () => boolean } {
  let answered = false;
  answer.then(() => answered = true, () => answered = true);
  return { answer, done: () => answered };
}

for (const store of STORES) {
  const test = (name: string, fn: (server: TestServer, clock: WatchedClock) => Promise<void>) =>
    Deno.test({
      name: `${store.name}: ${name}`,
      ignore: store.ignore,
      fn: async () => {
        const clock = new WatchedClock();
        await using server = await startTestServer({ clock, config: store.config() });
        await fn(server, clock);
      },
    });

  test("GET /v1/jobs/{id}?wait_ms answers once the job is acked, with its result", async (server) => {
    const { id } = ok(await server.request("POST", "/v1/queues/w/jobs", { payload: 1 }), 201);
    const waiting = inFlight(server.request("GET", `/v1/jobs/${id}?wait_ms=60000`));
    const job = await leaseOne(server, "w");
    await settle();
    assert.equal(waiting.done(), false, "a running job keeps the answer waiting");
    ok(
      await server.request("POST", `/v1/jobs/${id}/ack`, {
        token: job.lease.token,
        result: { sum: 3 },
      }),
      200,
    );
    const ended = ok(await waiting.answer, 200);
    assert.deepEqual([ended.state, ended.result], ["done", { sum: 3 }]);
  });

  test(
    "GET /v1/jobs/{id}?wait_ms answers the job as it is when the time runs out",
    async (server, clock) => {
      const { id } = ok(await server.request("POST", "/v1/queues/w/jobs", { payload: 1 }), 201);
      const waiting = inFlight(server.request("GET", `/v1/jobs/${id}?wait_ms=5432`));
      await clock.timerSet(5432);
      await server.advance(5_431);
      assert.equal(waiting.done(), false);
      await server.advance(1);
      assert.equal(ok(await waiting.answer, 200).state, "pending");
    },
  );

  test("POST /v1/queues/{queue}/jobs?wait_ms answers when the job has ended, carrying it", async (server) => {
    const posted = inFlight(
      server.request("POST", "/v1/queues/w/jobs?wait_ms=60000", { payload: { n: 2 } }),
    );
    const job = await leaseOne(server, "w");
    ok(
      await server.request("POST", `/v1/jobs/${job.id}/ack`, {
        token: job.lease.token,
        result: "four",
      }),
      200,
    );
    const answer = ok(await posted.answer, 201);
    assert.deepEqual(
      [answer.id, answer.deduplicated, answer.duplicate],
      [job.id, false, null],
    );
    assert.deepEqual([answer.job.state, answer.job.result], ["done", "four"]);
  });

  test("a batch with wait_ms answers when its last job has ended, each entry with its job", async (server) => {
    const posted = inFlight(
      server.request("POST", "/v1/queues/w/jobs?wait_ms=60000", {
        jobs: [{ payload: 1 }, { payload: 2, max_attempts: 1 }, { payload: 3, priority: "x" }],
        atomic: false,
      }),
    );
    const first = await leaseOne(server, "w");
    const second = await leaseOne(server, "w");
    ok(await server.request("POST", `/v1/jobs/${first.id}/ack`, { token: first.lease.token }), 200);
    await settle();
    assert.equal(posted.done(), false, "one job still runs");
    ok(
      await server.request("POST", `/v1/jobs/${second.id}/nack`, {
        token: second.lease.token,
        error: "boom",
      }),
      200,
    );
    const { jobs } = ok(await posted.answer, 201);
    assert.deepEqual(jobs.map((e: Json) => e.job?.state ?? e.error.code), [
      "done",
      "dead",
      "validation_failed",
    ]);
    assert.equal(jobs[1].job.last_error, "boom");
  });

  test("a duplicate's wait waits for the job holding the key, answered 200", async (server) => {
    const body = { payload: 1, key: "k" };
    const { id } = ok(await server.request("POST", "/v1/queues/w/jobs", body), 201);
    const again = inFlight(server.request("POST", "/v1/queues/w/jobs?wait_ms=60000", body));
    const job = await leaseOne(server, "w");
    ok(await server.request("POST", `/v1/jobs/${id}/ack`, { token: job.lease.token }), 200);
    const answer = ok(await again.answer, 200);
    assert.deepEqual([answer.id, answer.deduplicated, answer.job.state], [id, true, "done"]);
  });

  test("a wait on a flow's blocked job answers once its prerequisites and it have run", async (server) => {
    const { jobs } = ok(
      await server.request("POST", "/v1/flows", {
        nodes: [
          { ref: "a", queue: "w", payload: 1 },
          { ref: "b", queue: "w", payload: 2, depends_on: ["a"] },
        ],
      }),
      201,
    );
    const waiting = inFlight(server.request("GET", `/v1/jobs/${jobs.b}?wait_ms=60000`));
    const a = await leaseOne(server, "w");
    ok(await server.request("POST", `/v1/jobs/${a.id}/ack`, { token: a.lease.token }), 200);
    await settle();
    assert.equal(waiting.done(), false, "b's release is not its end");
    const b = await leaseOne(server, "w");
    assert.equal(b.id, jobs.b);
    ok(
      await server.request("POST", `/v1/jobs/${b.id}/ack`, { token: b.lease.token, result: "b" }),
      200,
    );
    const ended = ok(await waiting.answer, 200);
    assert.deepEqual([ended.state, ended.result, ended.flow.ref], ["done", "b", "b"]);
  });

  test("an enqueue's wait that runs out answers the jobs as they are", async (server, clock) => {
    const posted = inFlight(
      server.request("POST", "/v1/queues/w/jobs?wait_ms=7777", { payload: 1, delay_ms: 60_000 }),
    );
    await clock.timerSet(7777);
    await server.advance(7_777);
    const answer = ok(await posted.answer, 201);
    assert.equal(answer.job.state, "delayed");
  });
}

Deno.test("wait_ms is an integer from 0 to 60000, given once; an unknown job answers 404", async () => {
  await using server = await startTestServer();
  const { id } = ok(await server.request("POST", "/v1/queues/w/jobs", { payload: 1 }), 201);
  const refusals: [string, string][] = [
    [`/v1/jobs/${id}?wait_ms=60001`, 'Invalid "wait_ms": expected an integer from 0 to 60000'],
    [`/v1/jobs/${id}?wait_ms=1&wait_ms=2`, 'Invalid "wait_ms": given more than once'],
    [`/v1/jobs/${id}?wait_ms=-1`, 'Invalid "wait_ms": expected a non-negative integer'],
    [`/v1/jobs/${id}?wait=5`, 'Invalid "wait": unknown query parameter'],
  ];
  for (const [path, message] of refusals) {
    assert.equal(ok(await server.request("GET", path), 400).error.message, message, path);
  }
  const post = await server.request("POST", "/v1/queues/w/jobs?wait_ms=x", { payload: 1 });
  assert.equal(ok(post, 400).error.message, 'Invalid "wait_ms": expected a non-negative integer');
  assert.equal(
    ok(await server.request("GET", "/v1/queues/w"), 200).counts.pending,
    1,
    "not stored",
  );
  const missing = await server.request("GET", "/v1/jobs/999999?wait_ms=60000");
  assert.equal(ok(missing, 404).error.code, "not_found");
  assert.equal(ok(await server.request("GET", `/v1/jobs/${id}?wait_ms=0`), 200).state, "pending");
});

Deno.test("a wait on a job that has ended answers at once", async () => {
  await using server = await startTestServer();
  const { id } = ok(await server.request("POST", "/v1/queues/w/jobs", { payload: 1 }), 201);
  ok(await server.request("DELETE", `/v1/jobs/${id}`), 200);
  const started = performance.now();
  assert.equal(
    ok(await server.request("GET", `/v1/jobs/${id}?wait_ms=60000`), 200).state,
    "cancelled",
  );
  assert.ok(performance.now() - started < 1000);
});

Deno.test("a waiting GET answers at shutdown with the job as it is", async () => {
  const server = await startTestServer();
  try {
    const { id } = ok(await server.request("POST", "/v1/queues/w/jobs", { payload: 1 }), 201);
    const waiting = server.request("GET", `/v1/jobs/${id}?wait_ms=60000`);
    await settle();
    const stopping = server.stop();
    assert.equal(ok(await waiting, 200).state, "pending");
    await stopping;
  } finally {
    await server[Symbol.asyncDispose]();
  }
});

Deno.test({
  name: "postgres: a wait on one server hears the ack made through another",
  ignore: pg === null,
  fn: async () => {
    const schema = pg!.schema();
    const clock = new ManualClock();
    try {
      await using a = await startTestServer({ clock, config: pgServerConfig(pg!, schema) });
      await using b = await startTestServer({ clock, config: pgServerConfig(pg!, schema) });
      const posted = inFlight(a.request("POST", "/v1/queues/w/jobs?wait_ms=60000", { payload: 1 }));
      const job = await leaseOne(b, "w");
      const read = inFlight(a.request("GET", `/v1/jobs/${job.id}?wait_ms=60000`));
      ok(await b.request("POST", `/v1/jobs/${job.id}/ack`, { token: job.lease.token }), 200);
      assert.equal(ok(await posted.answer, 201).job.state, "done");
      assert.equal(ok(await read.answer, 200).state, "done");
    } finally {
      await pg!.dropSchema(schema);
    }
  },
});

dropPgTestDatabaseAfterwards(pg);
