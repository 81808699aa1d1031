/**
 * Two tegami servers in this process on one fresh schema of the run's PostgreSQL test database,
 * sharing one manual clock: the setup of every test of what one server does reaching the other.
 *
 * @module
 */

import { ManualClock } from "../../lib/core/clock.ts";
import { pgServerConfig, type PgTestDatabase } from "./pg.ts";
import { startTestServer, type TestServer } from "./test_server.ts";

/**
 * Registers a test that runs `fn` with two servers on a fresh schema of `db` and their shared
 * clock; ignored when `db` is null (no PostgreSQL outside CI). The schema is dropped afterwards.
 */
export function pgPairTest(
  db: PgTestDatabase | null,
  name: string,
  fn: (a: TestServer, b: TestServer, clock: ManualClock) => Promise<void>,
): void {
  Deno.test({
    name,
    ignore: db === null,
    fn: async () => {
      const schema = db!.schema();
      const clock = new ManualClock();
      await using a = await startTestServer({ clock, config: pgServerConfig(db!, schema) });
      await using b = await startTestServer({ clock, config: pgServerConfig(db!, schema) });
      try {
        await fn(a, b, clock);
      } finally {
        await a.stop();
        await b.stop();
        await db!.dropSchema(schema);
      }
    },
  });
}
