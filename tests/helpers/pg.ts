/**
 * A PostgreSQL server for tests: one fresh database per test run (per test file), dropped by
 * the file's last test, and a fresh schema per store inside it.
 *
 * The server is `TEGAMI_TEST_PG` (a `postgres://` URL of any database on it), else the local
 * one at 127.0.0.1:5432 as user postgres. When it cannot be reached, the PostgreSQL tests fail
 * under CI (`CI=true`) and are skipped elsewhere with a message naming the variable.
 *
 * @module
 */

import postgres from "postgres";

/** The variable naming the test server. */
export const PG_TEST_VAR = "TEGAMI_TEST_PG";

const DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/postgres";

/** A database made for this test run. */
export interface PgTestDatabase {
  /** Its URL. */
  readonly url: string;
  /** A new schema name, unique within the run. */
  schema(): string;
  /** Drops a schema and everything in it. */
  dropSchema(name: string): Promise<void>;
  /** Runs SQL as the test's admin (inspection, sabotage). */
  readonly admin: postgres.Sql;
  /** Drops the database. */
  drop(): Promise<void>;
}

let made: Promise<PgTestDatabase | null> | null = null;

/**
 * The run's database, created on first call; null (after printing why) when no server is
 * reachable outside CI. Under CI an unreachable server throws.
 */
export function pgTestDatabase(): Promise<PgTestDatabase | null> {
  made ??= create();
  return made;
}

async function create(): Promise<PgTestDatabase | null> {
  const base = Deno.env.get(PG_TEST_VAR) ?? DEFAULT_URL;
  const root = postgres(base, { max: 1, connect_timeout: 3, onnotice: () => {} });
  const name = `pg_test_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  try {
    await root.unsafe(`CREATE DATABASE ${name}`);
  } catch (error) {
    await root.end({ timeout: 1 });
    const reason = `PostgreSQL at ${redact(base)} is not usable: ${(error as Error).message}`;
    if (Deno.env.get("CI") === "true") throw new Error(`${reason} (CI needs it)`);
    console.warn(
      `Skipping PostgreSQL tests: ${reason}. Set ${PG_TEST_VAR}=postgres://… to run them.`,
    );
    return null;
  }
  await dropForgotten(root);
  const url = new URL(base);
  url.pathname = `/${name}`;
  const admin = postgres(url.href, { max: 2, onnotice: () => {} });
  let n = 0;
  return {
    url: url.href,
    schema: () => `s${++n}_${crypto.randomUUID().slice(0, 4)}`,
    dropSchema: async (schema) => {
      await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    },
    admin,
    drop: async () => {
      await admin.end({ timeout: 1 });
      await root.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await root.end({ timeout: 1 });
      made = null;
    },
  };
}

/**
 * Drops test databases a killed run left behind: named like ours, made over two hours ago, and
 * with nobody connected.
 */
async function dropForgotten(root: postgres.Sql): Promise<void> {
  const stale = await root<{ datname: string }[]>`
    SELECT d.datname FROM pg_database d
    WHERE d.datname LIKE 'pg\_test\_%'
      AND (pg_stat_file('base/' || d.oid || '/PG_VERSION')).modification < now() - interval '2 hours'
      AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.datname = d.datname)`
    .catch(() => []);
  for (const { datname } of stale) {
    await root.unsafe(`DROP DATABASE IF EXISTS "${datname}"`).catch(() => {});
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@");
}

/** Registers the test that drops the run's database; call it last in a test file. */
export function dropPgTestDatabaseAfterwards(db: PgTestDatabase | null): void {
  Deno.test({
    name: "postgres: the test database is dropped",
    ignore: db === null,
    fn: async () => {
      await db!.drop();
    },
  });
}

/**
 * Config fields that put a test server on a schema of the run's database (polling every
 * 100 ms, so a test that relies on the fallback does not wait long).
 */
export function pgServerConfig(
  db: PgTestDatabase,
  schema: string,
): { db: string; pgSchema: string; pgPollMs: number; pgPool: number } {
  return { db: db.url, pgSchema: schema, pgPollMs: 100, pgPool: 4 };
}
