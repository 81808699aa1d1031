/**
 * Fair shares over HTTP: `GET`, `PUT` and `DELETE /v1/queues/{queue}/groups/{group}` and the
 * paged `GET /v1/queues/{queue}/groups`, on SQLite and on PostgreSQL; group names percent-encoded
 * in the path; validation and scopes; and what the settings do to leases: weights share the turns,
 * a group's concurrency replaces the queue's `group_limit`, a group's rate holds its jobs (shown
 * in the group and in the queue's stats). Every answer is checked against the OpenAPI document.
 */

import assert from "node:assert/strict";
import type { ServeConfig } from "../../lib/config/serve_config.ts";
import { createLogger } from "../../lib/observe/log.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";
import { lease, queueStats } from "../helpers/http_calls.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";

const pg = await pgTestDatabase();

const STORES: { name: string; config: () => Partial<ServeConfig>; ignore: boolean }[] = [
  { name: "sqlite", config: () => ({}), ignore: false },
  { name: "postgres", config: () => pgServerConfig(pg!, pg!.schema()), ignore: pg === null },
];

const DEFAULTS = { weight: 1, concurrency: null, rate: null };

/** The path of a group, its name percent-encoded. */
function groupPath(queue: string, group: string): string {
  return `/v1/queues/${queue}/groups/${encodeURIComponent(group)}`;
}

/** Sends `method` to a group's path; fails the test unless 200; answers the group. */
async function call(
  server: TestServer,
  method: string,
  queue: string,
  group: string,
  body?: unknown,
  headers?: HeadersInit,
  // deno-lint-ignore no-explicit-any
): Promise<any> {
  const answer = await server.request(method, groupPath(queue, group), body, headers);
  assert.equal(answer.status, 200, `${method} ${group}: ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** Enqueues `n` jobs of `group` in one batch. */
async function backlog(server: TestServer, queue: string, group: string, n: number) {
  const jobs = Array.from({ length: n }, (_, i) => ({ payload: i, group }));
  const answer = await server.request("POST", `/v1/queues/${queue}/jobs`, { jobs });
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
}

/** A delivery, as far as these tests read it. */
interface Leased {
  id: number;
  group: string | null;
  lease: { token: string };
}

/** Leases up to `max` jobs of `queue`; fails the test unless 200. */
async function leaseJobs(server: TestServer, queue: string, max: number): Promise<Leased[]> {
  return (await lease(server, queue, { max })) as unknown as Leased[];
}

/** Groups of a delivery list, counted. */
function byGroup(jobs: { group?: string | null }[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const job of jobs) counts[job.group ?? "-"] = (counts[job.group ?? "-"] ?? 0) + 1;
  return counts;
}

/** Byte order of UTF-8, as both stores list names. */
function byteOrder(a: string, b: string): number {
  const x = new TextEncoder().encode(a), y = new TextEncoder().encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

for (const store of STORES) {
  Deno.test({
    name: `${store.name}: PUT, GET, list and DELETE of a group's settings round trip`,
    ignore: store.ignore,
    fn: async () => {
      await using server = await startTestServer({ config: store.config() });
      const fresh = await call(server, "GET", "mail", "acme");
      assert.deepEqual(fresh, {
        group: "acme",
        settings: DEFAULTS,
        configured: false,
        pending: 0,
        leased: 0,
        limit: 1,
        held: null,
        held_until: null,
      });
      const put = await call(server, "PUT", "mail", "acme", {
        weight: 3,
        concurrency: 2,
        rate: "10/1000ms",
      });
      const configured = {
        group: "acme",
        settings: { weight: 3, concurrency: 2, rate: "10/1s" },
        configured: true,
        pending: 0,
        leased: 0,
        limit: 2,
        held: null,
        held_until: null,
      };
      assert.deepEqual(put, configured);
      assert.deepEqual(await call(server, "GET", "mail", "acme"), configured);
      // A PUT replaces the whole object: what is left out takes its default.
      const weightOnly = await call(server, "PUT", "mail", "acme", { weight: 0.5 });
      assert.deepEqual(weightOnly.settings, { weight: 0.5, concurrency: null, rate: null });
      assert.equal(weightOnly.limit, 1, "the queue's group_limit");
      await call(server, "PUT", "mail", "acme", { weight: 3, concurrency: 2, rate: "10/1s" });

      // A group with jobs but no settings is listed too; one with neither is not.
      await backlog(server, "mail", "busy", 2);
      await call(server, "GET", "mail", "idle");
      const listed = await server.request("GET", "/v1/queues/mail/groups");
      assert.equal(listed.status, 200);
      assert.deepEqual(listed.body, {
        groups: [
          configured,
          { ...fresh, group: "busy", pending: 2 },
        ],
        next_after: null,
      });
      // The queue's group_limit is the limit of a group without a concurrency of its own.
      const settings = await server.request("PUT", "/v1/queues/mail/settings", { group_limit: 4 });
      assert.equal(settings.status, 200);
      assert.equal((await call(server, "GET", "mail", "busy")).limit, 4);
      assert.equal((await call(server, "GET", "mail", "acme")).limit, 2);

      const reset = await call(server, "DELETE", "mail", "acme");
      assert.deepEqual(reset, { ...fresh, limit: 4 });
      const after = await server.request("GET", "/v1/queues/mail/groups");
      assert.deepEqual(after.body.groups.map((g: { group: string }) => g.group), ["busy"]);
      // Resetting a group without settings is fine, and changes nothing.
      assert.deepEqual(await call(server, "DELETE", "mail", "acme"), { ...fresh, limit: 4 });
      // Settings that are all the defaults remove the group's own, like a DELETE.
      await call(server, "PUT", "mail", "acme", { weight: 2 });
      assert.equal((await call(server, "PUT", "mail", "acme", {})).configured, false);
    },
  });

  Deno.test({
    name: `${store.name}: a group's settings outlive the server and stay while it has no jobs`,
    ignore: store.ignore,
    fn: async () => {
      const config = store.config();
      const dir = await Deno.makeTempDir({ prefix: "tegami-groups-" });
      try {
        {
          await using first = await startTestServer({ dir, config });
          await call(first, "PUT", "q", "acme", { weight: 2, rate: "5/1m" });
        }
        await using again = await startTestServer({ dir, config });
        const group = await call(again, "GET", "q", "acme");
        assert.deepEqual(group.settings, { weight: 2, concurrency: null, rate: "5/1m" });
        assert.equal(group.configured, true);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });

  Deno.test({
    name: `${store.name}: group names with /, spaces, % and Unicode are percent-encoded`,
    ignore: store.ignore,
    fn: async () => {
      await using server = await startTestServer({ config: store.config() });
      const names = ["tenant/eu/7", "two words", "100%", "日本語", "ünïcödé 🎉", "é".repeat(256)];
      for (const [i, name] of names.entries()) {
        const put = await call(server, "PUT", "q", name, { weight: i + 1 });
        assert.equal(put.group, name);
        await backlog(server, "q", name, 1);
        const got = await call(server, "GET", "q", name);
        assert.deepEqual([got.group, got.settings.weight, got.pending], [name, i + 1, 1]);
      }
      const listed = await server.request("GET", "/v1/queues/q/groups");
      assert.deepEqual(
        listed.body.groups.map((g: { group: string }) => g.group),
        [...names].sort(byteOrder),
      );
      // The jobs' groups are the same groups as the paths'.
      const jobs = await leaseJobs(server, "q", 10);
      assert.deepEqual(jobs.map((j) => j.group ?? "").sort(byteOrder), [...names].sort(byteOrder));
    },
  });

  Deno.test({
    name: `${store.name}: GET /v1/queues/{q}/groups pages by name with limit and after`,
    ignore: store.ignore,
    fn: async () => {
      await using server = await startTestServer({ config: store.config() });
      const names = ["b", "a_b", "A", "a-b", "a", "Z9", "0x"];
      for (const name of names) await call(server, "PUT", "q", name, { weight: 2 });
      const order = [...names].sort(byteOrder);
      const seen: string[] = [];
      let after: string | null = null;
      for (let pages = 0; pages < 10; pages++) {
        const query: string = "?limit=3" + (after === null ? "" : `&after=${after}`);
        const page = await server.request("GET", `/v1/queues/q/groups${query}`);
        assert.equal(page.status, 200, JSON.stringify(page.body));
        const got = page.body.groups.map((g: { group: string }) => g.group);
        seen.push(...got);
        assert.equal(page.body.next_after, got.length === 3 ? got[2] : null);
        after = page.body.next_after;
        if (after === null) break;
      }
      assert.deepEqual(seen, order);
      // A cursor need not name a group; it is percent-encoded like any query value.
      const between = await server.request("GET", "/v1/queues/q/groups?after=a%2Da&limit=2");
      assert.deepEqual(between.body.groups.map((g: { group: string }) => g.group), ["a-b", "a_b"]);
      // Another queue's groups are its own.
      const other = await server.request("GET", "/v1/queues/other/groups");
      assert.deepEqual(other.body, { groups: [], next_after: null });
    },
  });

  Deno.test({
    name: `${store.name}: weights 3 and 1 share one-at-a-time leases about 3 to 1`,
    ignore: store.ignore,
    fn: async () => {
      await using server = await startTestServer({ config: store.config() });
      await call(server, "PUT", "q", "heavy", { weight: 3 });
      await backlog(server, "q", "heavy", 40);
      await backlog(server, "q", "light", 40);
      const served: string[] = [];
      for (let i = 0; i < 40; i++) {
        const [job] = await leaseJobs(server, "q", 1);
        served.push(job.group!);
        const ack = await server.request("POST", `/v1/jobs/${job.id}/ack`, {
          token: job.lease.token,
        });
        assert.equal(ack.status, 200);
      }
      const counts = byGroup(served.map((group) => ({ group })));
      assert.ok(
        counts.heavy >= 28 && counts.heavy <= 32,
        `heavy ${counts.heavy}, light ${counts.light}: ${served.join(" ")}`,
      );
      assert.equal(counts.heavy + counts.light, 40);
      // Fair within any window too: light is never kept waiting more than a few turns.
      let run = 0;
      for (const group of served) {
        run = group === "heavy" ? run + 1 : 0;
        assert.ok(run <= 4, served.join(" "));
      }
    },
  });

  Deno.test({
    name: `${store.name}: a group's concurrency 2 beats the queue's group_limit 1`,
    ignore: store.ignore,
    fn: async () => {
      await using server = await startTestServer({ config: store.config() });
      await call(server, "PUT", "q", "wide", { concurrency: 2 });
      await backlog(server, "q", "wide", 3);
      await backlog(server, "q", "narrow", 3);
      const jobs = await leaseJobs(server, "q", 10);
      assert.deepEqual(byGroup(jobs), { wide: 2, narrow: 1 });
      assert.deepEqual(await leaseJobs(server, "q", 10), []);
      const wide = await call(server, "GET", "q", "wide");
      assert.deepEqual(
        [wide.pending, wide.leased, wide.limit, wide.held, wide.held_until],
        [1, 2, 2, "concurrency", null],
      );
      const narrow = await call(server, "GET", "q", "narrow");
      assert.deepEqual([narrow.pending, narrow.leased, narrow.limit, narrow.held], [
        2,
        1,
        1,
        "concurrency",
      ]);
      const stats = await queueStats(server, "q");
      assert.deepEqual(stats.groups, {
        waiting: 2,
        leased: 2,
        full: 2,
        rate_held: 0,
        top_held: [
          { group: "narrow", held: "concurrency", pending: 2, leased: 1, limit: 1 },
          { group: "wide", held: "concurrency", pending: 1, leased: 2, limit: 2 },
        ],
      });
    },
  });

  Deno.test({
    name: `${store.name}: a group's rate holds its jobs until its next token`,
    ignore: store.ignore,
    fn: async () => {
      await using server = await startTestServer({ config: store.config() });
      await call(server, "PUT", "q", "slow", { rate: "2/1s", concurrency: 10 });
      await backlog(server, "q", "slow", 3);
      await backlog(server, "q", "free", 1);
      const first = await leaseJobs(server, "q", 10);
      assert.deepEqual(byGroup(first), { slow: 1, free: 1 });
      const now = server.clock.now();
      const slow = await call(server, "GET", "q", "slow");
      assert.deepEqual([slow.pending, slow.leased, slow.limit, slow.held], [2, 1, 10, "rate"]);
      assert.ok(
        slow.held_until > now && slow.held_until <= now + 500,
        `held_until ${slow.held_until - now} ms from now`,
      );
      const stats = await queueStats(server, "q");
      assert.equal(stats.groups.rate_held, 1);
      assert.equal(stats.groups.full, 0);
      assert.deepEqual(stats.groups.top_held, [
        { group: "slow", held: "rate", pending: 2, leased: 1, limit: 10 },
      ]);
      assert.deepEqual(await leaseJobs(server, "q", 10), []);
      await server.advance(slow.held_until - now);
      assert.deepEqual(byGroup(await leaseJobs(server, "q", 10)), { slow: 1 });
    },
  });
}

Deno.test("PUT /v1/queues/{q}/groups/{g} refuses bad settings with 400 naming the field", async () => {
  await using server = await startTestServer();
  await call(server, "PUT", "q", "acme", { weight: 2 });
  const cases: [unknown, RegExp][] = [
    [[], /"body": expected a JSON object/],
    ['"x"', /"body": expected a JSON object/],
    [{ wieght: 3 }, /"wieght": unknown field/],
    [{ weight: 3, group_limit: 2 }, /"group_limit": unknown field/],
    [{ weight: 0 }, /"weight": expected a number from 0.01 to 1000/],
    [{ weight: 0.001 }, /"weight": expected a number from 0.01 to 1000/],
    [{ weight: 1001 }, /"weight": expected a number from 0.01 to 1000/],
    [{ weight: "3" }, /"weight": expected a number or null/],
    [{ concurrency: 0 }, /"concurrency": expected an integer from 1 to 1000000, got 0/],
    [{ concurrency: 1.5 }, /"concurrency": expected an integer or null/],
    [{ rate: "fast" }, /"rate": expected "LIMIT\/INTERVAL"/],
    [{ rate: 10 }, /"rate": expected "LIMIT\/INTERVAL"/],
    [{ rate: "0/1s" }, /"rate": expected a limit from 1 to 1000000, got 0/],
    [{ rate: "10/25h" }, /"rate": expected an interval from 1ms to 24h/],
  ];
  for (const [body, message] of cases) {
    const answer = await server.request("PUT", "/v1/queues/q/groups/acme", body);
    assert.equal(answer.status, 400, JSON.stringify(body));
    assert.equal(answer.body.error.code, "validation_failed");
    assert.match(answer.body.error.message, message, JSON.stringify(body));
  }
  const missing = await server.request("PUT", "/v1/queues/q/groups/acme");
  assert.equal(missing.status, 400);
  assert.equal(missing.body.error.code, "validation_failed");
  // Nothing refused changed anything.
  assert.deepEqual((await call(server, "GET", "q", "acme")).settings, {
    ...DEFAULTS,
    weight: 2,
  });
});

Deno.test("the group routes refuse a bad group name, queue name or query with 400", async () => {
  await using server = await startTestServer();
  const cases: [string, string, string][] = [
    ["GET", groupPath("q", "x".repeat(513)), "group"],
    ["PUT", groupPath("q", "é".repeat(257)), "group"],
    ["DELETE", groupPath("q", "a\u0000b"), "group"],
    ["GET", "/v1/queues/q/groups/%zz", "group"],
    ["PUT", "/v1/queues/q/groups/%ED%A0%80", "group"],
    ["GET", "/v1/queues/-bad/groups/acme", "queue"],
    ["GET", "/v1/queues/-bad/groups", "queue"],
    ["GET", "/v1/queues/q/groups?limit=0", "limit"],
    ["GET", "/v1/queues/q/groups?limit=1001", "limit"],
    ["GET", "/v1/queues/q/groups?limit=x", "limit"],
    ["GET", "/v1/queues/q/groups?after=", "after"],
    ["GET", `/v1/queues/q/groups?after=${"x".repeat(513)}`, "after"],
    ["GET", "/v1/queues/q/groups?page=2", "page"],
    ["GET", "/v1/queues/q/groups/acme?weight=2", "weight"],
  ];
  for (const [method, path, field] of cases) {
    const body = method === "PUT" ? { weight: 2 } : undefined;
    const answer = await server.request(method, path, body);
    assert.equal(answer.status, 400, `${method} ${path.slice(0, 60)}`);
    assert.equal(answer.body.error.code, "validation_failed");
    assert.ok(answer.body.error.message.includes(`"${field}"`), answer.body.error.message);
  }
  // 512 bytes of UTF-8 is the longest name; an empty one names no group but the list.
  assert.equal((await call(server, "PUT", "q", "é".repeat(256), { weight: 2 })).configured, true);
  const empty = await server.request("PUT", "/v1/queues/q/groups/", { weight: 2 });
  assert.equal(empty.status, 404);
  const listed = await server.request("GET", "/v1/queues/q/groups?limit=1000");
  assert.equal(listed.body.groups.length, 1);
});

Deno.test("the group routes take the queue settings routes' scopes, and log each change", async () => {
  const lines: string[] = [];
  const tokens = {
    admin: "groups-admin-token-0123456789",
    producer: "groups-producer-token-0123456789",
    consumer: "groups-consumer-token-0123456789",
    elsewhere: "groups-elsewhere-token-012345678",
  };
  await using server = await startTestServer({
    log: createLogger({ format: "json", write: (line) => lines.push(line) }),
    tokens: [
      { name: "ops", token: tokens.admin, scopes: ["admin"] },
      { name: "app", token: tokens.producer, scopes: ["produce"] },
      { name: "worker", token: tokens.consumer, scopes: ["consume"] },
      { name: "team", token: tokens.elsewhere, scopes: ["admin"], queues: ["team.*"] },
    ],
  });
  const as = (name: keyof typeof tokens) => ({ authorization: `Bearer ${tokens[name]}` });
  const status = async (method: string, path: string, headers?: HeadersInit) => {
    const body = method === "PUT" ? { weight: 2 } : undefined;
    return (await server.request(method, path, body, headers)).status;
  };
  const one = "/v1/queues/q/groups/acme";
  const list = "/v1/queues/q/groups";
  for (const path of [one, list]) {
    assert.equal(await status("GET", path), 401, path);
    assert.equal(await status("GET", path, as("producer")), 200, path);
    assert.equal(await status("GET", path, as("consumer")), 200, path);
    assert.equal(await status("GET", path, as("admin")), 200, path);
    assert.equal(await status("GET", path, as("elsewhere")), 403, path);
  }
  assert.equal(await status("GET", "/v1/queues/team.a/groups/acme", as("elsewhere")), 200);
  for (const method of ["PUT", "DELETE"]) {
    assert.equal(await status(method, one), 401, method);
    assert.equal(await status(method, one, as("producer")), 403, method);
    assert.equal(await status(method, one, as("consumer")), 403, method);
    assert.equal(await status(method, one, as("elsewhere")), 403, method);
  }
  assert.equal((await call(server, "GET", "q", "acme", undefined, as("admin"))).configured, false);
  const changes = () =>
    lines.map((line) => JSON.parse(line)).filter((e) => e.msg === "Group settings changed");
  assert.deepEqual(changes(), [], "refused calls change nothing and log nothing");
  await call(server, "PUT", "q", "acme", { weight: 2, rate: "5/1s" }, as("admin"));
  await call(server, "DELETE", "team.a", "a/b", undefined, as("elsewhere"));
  assert.deepEqual(
    changes().map(({ queue, group, settings, by }) => ({ queue, group, settings, by })),
    [
      {
        queue: "q",
        group: "acme",
        settings: '{"weight":2,"concurrency":null,"rate":"5/1s"}',
        by: "ops",
      },
      {
        queue: "team.a",
        group: "a/b",
        settings: '{"weight":1,"concurrency":null,"rate":null}',
        by: "team",
      },
    ],
  );
});

dropPgTestDatabaseAfterwards(pg);
