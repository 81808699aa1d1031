/**
 * The PostgreSQL store: the shared behaviour suite, each case on a fresh schema of the run's
 * database, plus what only a shared database has.
 */

import { PgStore } from "../../../lib/store/postgres/pg_store.ts";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../../helpers/pg.ts";
import { exerciseStore, SUITE_POLICY } from "../store_suite.ts";

const db = await pgTestDatabase();

exerciseStore("postgres", async () => {
  const schema = db!.schema();
  const open = () =>
    PgStore.open({ url: db!.url, schema, policy: SUITE_POLICY, poolSize: 4, pollMs: 50 });
  const store = await open();
  const peers: PgStore[] = [];
  return {
    store,
    peer: async () => {
      const peer = await open();
      peers.push(peer);
      return peer;
    },
    async cleanup() {
      await Promise.all([store, ...peers].map((s) => s.close()));
      await db!.dropSchema(schema);
    },
  };
}, { capabilities: { shared: true, localFiles: false }, ignore: db === null });

dropPgTestDatabaseAfterwards(db);
