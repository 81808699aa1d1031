/**
 * The lists sorted by name, `GET /v1/queues` and `GET /v1/schedules`: whole, or a page at a time
 * with `limit` and the cursor `after`, in byte order on either store (a PostgreSQL database's
 * collation may sort `a-b`, `A` and `a_b` otherwise), within a token's queues, and through the
 * client.
 */

import assert from "node:assert/strict";
import type { ServeConfig } from "../../lib/config/serve_config.ts";
import { TegamiClient } from "../../lib/client/mod.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";

const pg = await pgTestDatabase();

const STORES: { name: string; config: () => Partial<ServeConfig>; ignore: boolean }[] = [
  { name: "sqlite", config: () => ({}), ignore: false },
  { name: "postgres", config: () => pgServerConfig(pg!, pg!.schema()), ignore: pg === null },
];

/** Names whose byte order differs from a locale's: case, digits and every allowed mark. */
const NAMES = ["b", "a_b", "A", "a-b", "a.b", "a:b", "Z9", "0x", "a"];
const BYTE_ORDER = [...NAMES].sort();

const ADMIN = "admin-token-0123456789abcdef";
const LIMITED = "limited-token-0123456789abcdef";

type Page<K extends string> = { [key in K]: { name: string }[] } & { next_after: string | null };

/** Reads every page of `path` with `limit`, checking each cursor, and answers the names. */
async function readPages<K extends string>(
  server: TestServer,
  path: string,
  key: K,
  limit: number,
  headers: HeadersInit,
): Promise<string[]> {
  const names: string[] = [];
  let after: string | null = null;
  for (let pages = 0; pages < 20; pages++) {
    const query = `?limit=${limit}` + (after === null ? "" : `&after=${after}`);
    const answer = await server.request("GET", path + query, undefined, headers);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const page = answer.body as Page<K>;
    const got = page[key].map((entry) => entry.name);
    assert.ok(got.length <= limit);
    names.push(...got);
    assert.equal(page.next_after, got.length === limit ? got[got.length - 1] : null);
    if (page.next_after === null) return names;
    after = page.next_after;
  }
  throw new Error("more pages than names");
}

for (const store of STORES) {
  Deno.test({
    name: `${store.name}: queues and schedules are listed in byte order, whole or a page at a time`,
    ignore: store.ignore,
    fn: async () => {
      await using server = await startTestServer({
        config: store.config(),
        tokens: [
          { name: "ops", token: ADMIN, scopes: ["admin"] },
          { name: "team", token: LIMITED, scopes: ["admin"], queues: ["a*"] },
        ],
      });
      const admin = { authorization: `Bearer ${ADMIN}` };
      const limited = { authorization: `Bearer ${LIMITED}` };
      for (const name of NAMES) {
        const enqueued = await server.request("POST", `/v1/queues/${name}/jobs`, {
          payload: 1,
        }, admin);
        assert.equal(enqueued.status, 201, JSON.stringify(enqueued.body));
        const put = await server.request("PUT", `/v1/schedules/s-${name}`, {
          queue: name,
          cron: "0 3 * * *",
          payload: 1,
        }, admin);
        assert.equal(put.status, 201, JSON.stringify(put.body));
      }

      const whole = await server.request("GET", "/v1/queues", undefined, admin);
      const wholeBody = whole.body as Page<"queues">;
      assert.deepEqual(wholeBody.queues.map((q) => q.name), BYTE_ORDER);
      assert.equal(wholeBody.next_after, null, "no cursor without limit");
      for (const limit of [1, 2, 4, 9, 1000]) {
        assert.deepEqual(await readPages(server, "/v1/queues", "queues", limit, admin), BYTE_ORDER);
      }
      // A cursor need not name a queue that exists.
      const between = await server.request("GET", "/v1/queues?limit=2&after=a0", undefined, admin);
      assert.deepEqual((between.body as Page<"queues">).queues.map((q) => q.name), ["a:b", "a_b"]);
      // A token sees its own queues only, and pages count only those.
      const own = BYTE_ORDER.filter((name) => name.startsWith("a"));
      assert.deepEqual(await readPages(server, "/v1/queues", "queues", 2, limited), own);

      const schedules = BYTE_ORDER.map((name) => `s-${name}`);
      const allSchedules = await server.request("GET", "/v1/schedules", undefined, admin);
      assert.deepEqual(
        (allSchedules.body as Page<"schedules">).schedules.map((s) => s.name),
        schedules,
      );
      assert.deepEqual(
        await readPages(server, "/v1/schedules", "schedules", 4, admin),
        schedules,
      );
      assert.deepEqual(
        await readPages(server, "/v1/schedules", "schedules", 3, limited),
        own.map((name) => `s-${name}`),
      );

      for (
        const [query, field] of [
          ["limit=0", "limit"],
          ["limit=1001", "limit"],
          ["limit=x", "limit"],
          ["after=-a", "after"],
          ["after=" + "a".repeat(129), "after"],
          ["page=2", "page"],
        ]
      ) {
        for (const path of ["/v1/queues", "/v1/schedules"]) {
          const refused = await server.request("GET", `${path}?${query}`, undefined, admin);
          assert.equal(refused.status, 400, `${path}?${query}`);
          assert.match(
            JSON.stringify(refused.body),
            new RegExp(`validation_failed.*\\\\"${field}`),
          );
        }
      }
    },
  });
}

Deno.test("the client reads every queue and schedule a page at a time, and pages on request", async () => {
  await using server = await startTestServer({});
  const client = new TegamiClient({ url: server.url });
  // More queues than one page of 1 000 holds.
  const names = Array.from({ length: 1003 }, (_, i) => `q${String(i).padStart(4, "0")}`);
  for (let at = 0; at < names.length; at += 100) {
    await Promise.all(names.slice(at, at + 100).map((name) => client.enqueue(name, 1)));
  }
  assert.deepEqual((await client.queues()).map((q) => q.name), names);
  const page = await client.listQueues({ limit: 2, after: "q0999" });
  assert.deepEqual(page.queues.map((q) => q.name), ["q1000", "q1001"]);
  assert.equal(page.next_after, "q1001");
  for (const name of ["b", "a", "c"]) {
    await client.putSchedule(name, { queue: "q0000", cron: "0 3 * * *", payload: 1 });
  }
  assert.deepEqual((await client.schedules()).map((s) => s.name), ["a", "b", "c"]);
  assert.deepEqual(await client.listSchedules({ limit: 2 }).then((p) => p.next_after), "b");
});

dropPgTestDatabaseAfterwards(pg);
