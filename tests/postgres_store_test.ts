/**
 * The PostgreSQL store: the shared behaviour suite, each case on a fresh schema of the run's
 * database, plus what only a shared database has.
 */

import { PgStore } from "../lib/store/postgres/pg_store.ts";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "./helpers/pg.ts";
import { exerciseStore, SUITE_POLICY } from "./store_suite.ts";

const db = await pgTestDatabase();

exerciseStore("postgres", async () => {
  const schema = db!.schema();
  const store = await PgStore.open({ url: db!.url, schema, policy: SUITE_POLICY, poolSize: 4 });
  return {
    store,
    async cleanup() {
      await store.close();
      await db!.dropSchema(schema);
    },
  };
}, { ignore: db === null });

dropPgTestDatabaseAfterwards(db);
