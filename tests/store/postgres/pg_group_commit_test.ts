/**
 * The PostgreSQL group commit with several transactions in flight: a write arriving while one
 * transaction runs starts the next at once, and a transaction that fails fails only its own
 * callers.
 */

import assert from "node:assert/strict";
import { OUTCOME_UNKNOWN, TegamiError } from "../../../lib/core/errors.ts";
import { connectPg } from "../../../lib/store/postgres/pg_driver.ts";
import { PgGroupCommit } from "../../../lib/store/postgres/pg_group_commit.ts";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../../helpers/pg.ts";
import { startTcpProxy, type TcpProxy } from "../../helpers/tcp_proxy.ts";

const db = await pgTestDatabase();

/** A group commit on a fresh schema with table `t (x int)`. */
async function open(inFlight: number) {
  const schema = db!.schema();
  await db!.admin.unsafe(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.t (x int)`);
  const commits = new PgGroupCommit(
    () => connectPg(db!.url, { schema, max: inFlight }),
    () => Promise.resolve(),
    () => {},
    () => {},
    inFlight,
  );
  const rows = async () =>
    (await db!.admin.unsafe(`SELECT x FROM ${schema}.t ORDER BY x`)).map((r) => r.x as number);
  return { commits, rows, schema };
}

Deno.test({
  name: "postgres group commit: with two in flight, a write does not wait for a running one",
  ignore: db === null,
  fn: async () => {
    const { commits, rows, schema } = await open(2);
    try {
      const { promise: gate, resolve: openGate } = Promise.withResolvers<void>();
      const first = commits.submit(async (tx) => {
        await tx`INSERT INTO t VALUES (1)`;
        await gate;
      });
      await new Promise((resolve) => setTimeout(resolve, 0));
      // The first transaction is open and waiting: the second runs beside it and commits.
      await commits.submit(async (tx) => {
        await tx`INSERT INTO t VALUES (2)`;
      });
      assert.deepEqual(await rows(), [2]);
      openGate();
      await first;
      assert.deepEqual(await rows(), [1, 2]);
    } finally {
      await commits.close();
      await db!.dropSchema(schema);
    }
  },
});

Deno.test({
  name: "postgres group commit: of two in flight, the one that fails fails only its callers",
  ignore: db === null,
  fn: async () => {
    const { commits, rows, schema } = await open(2);
    try {
      const { promise: gate, resolve: openGate } = Promise.withResolvers<void>();
      const failing = commits.submit(async (tx) => {
        await tx`INSERT INTO t VALUES (1)`;
        await gate;
        await tx`SELECT 1 / 0`; // the database refuses it: the transaction aborts
      });
      const failingPartner = commits.submit(async (tx) => {
        await tx`INSERT INTO t VALUES (3)`;
      });
      await new Promise((resolve) => setTimeout(resolve, 0));
      const other = commits.submit(async (tx) => {
        await tx`INSERT INTO t VALUES (2)`;
        return "committed";
      });
      assert.equal(await other, "committed");
      openGate();
      for (const outcome of await Promise.allSettled([failing, failingPartner])) {
        assert.equal(outcome.status, "rejected");
        const error = (outcome as PromiseRejectedResult).reason;
        assert.ok(error instanceof TegamiError && error.code === "unavailable", String(error));
      }
      assert.deepEqual(await rows(), [2]);
      // A statement refused is not an outage: writes go on.
      assert.equal(commits.down, false);
      await commits.submit(async (tx) => {
        await tx`INSERT INTO t VALUES (4)`;
      });
      assert.deepEqual(await rows(), [2, 4]);
    } finally {
      await commits.close();
      await db!.dropSchema(schema);
    }
  },
});

Deno.test({
  name: "postgres group commit: with one in flight, a write waits for the running transaction",
  ignore: db === null,
  fn: async () => {
    const { commits, rows, schema } = await open(1);
    try {
      const { promise: gate, resolve: openGate } = Promise.withResolvers<void>();
      const order: number[] = [];
      const first = commits.submit(async (tx) => {
        await tx`INSERT INTO t VALUES (1)`;
        await gate;
      }).then(() => order.push(1));
      await new Promise((resolve) => setTimeout(resolve, 0));
      const second = commits.submit(async (tx) => {
        await tx`INSERT INTO t VALUES (2)`;
      }).then(() => order.push(2));
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(await rows(), []);
      openGate();
      await Promise.all([first, second]);
      assert.deepEqual(order, [1, 2]);
      assert.deepEqual(await rows(), [1, 2]);
      await commits.drained();
    } finally {
      await commits.close();
      await db!.dropSchema(schema);
    }
  },
});

/** Runs one insert through a group commit whose connection the proxy cuts as `cut` says. */
async function cutAt(cut: (proxy: TcpProxy) => void) {
  const schema = db!.schema();
  await db!.admin.unsafe(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.t (x int)`);
  const target = new URL(db!.url);
  await using proxy = startTcpProxy(Number(target.port || 5432));
  const proxied = new URL(db!.url);
  proxied.hostname = "127.0.0.1";
  proxied.port = String(proxy.port);
  const commits = new PgGroupCommit(
    () => connectPg(proxied.href, { schema, max: 1 }),
    () => Promise.resolve(),
    () => {},
    () => {},
    1,
  );
  try {
    cut(proxy);
    const outcome = await commits.submit(async (tx) => {
      await tx`INSERT INTO t VALUES (1)`;
    }).then(() => null, (error) => error);
    assert.equal(proxy.cutsAt, 1, "the connection was cut");
    // A COMMIT that went through may still be under way in its backend when the answer is lost
    // (seen under the whole suite's load): look for its row for a second before saying it is not.
    let rows = await db!.admin.unsafe(`SELECT x FROM ${schema}.t`);
    for (let i = 0; i < 40 && rows.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      rows = await db!.admin.unsafe(`SELECT x FROM ${schema}.t`);
    }
    return { outcome, stored: rows.length === 1 };
  } finally {
    await commits.close();
    await db!.dropSchema(schema);
  }
}

Deno.test({
  name: "postgres group commit: a COMMIT whose answer is lost is answered unavailable as an " +
    "unknown outcome, made or not",
  ignore: db === null,
  fn: async () => {
    for (const when of ["after", "before"] as const) {
      const { outcome, stored } = await cutAt((proxy) => proxy.cutAt(when));
      assert.ok(outcome instanceof TegamiError && outcome.code === "unavailable", String(outcome));
      assert.ok(outcome.message.includes(OUTCOME_UNKNOWN), outcome.message);
      // Passed on, the COMMIT was made though nobody heard; cut before, it never was.
      assert.equal(stored, when === "after", when);
    }
  },
});

Deno.test({
  name: "postgres group commit: a connection lost before COMMIT is answered unavailable as " +
    "not written",
  ignore: db === null,
  fn: async () => {
    const { outcome, stored } = await cutAt((proxy) => proxy.cutAt("before", /insert/i));
    assert.ok(outcome instanceof TegamiError && outcome.code === "unavailable", String(outcome));
    assert.ok(!outcome.message.includes(OUTCOME_UNKNOWN), outcome.message);
    assert.equal(stored, false);
  },
});

dropPgTestDatabaseAfterwards(db);
