/**
 * The PostgreSQL schema as numbered migrations, kept as `.sql` files and embedded at build
 * time (`with { type: "text" }`), so a compiled binary needs no files.
 *
 * Several servers may start at once on one database: each migrates inside one transaction
 * holding a transaction-scoped advisory lock named after the schema, so exactly one applies
 * any missing migration and the others then find the schema current. `schema_version` in the
 * schema records how many have run.
 *
 * @module
 */

import type { Sql } from "./pg_driver.ts";
import migration1 from "./migrations/001_jobs.sql" with { type: "text" };
import migrationQueueSettings from "./migrations/002_queue_settings.sql" with { type: "text" };
import migrationDedupProgress from "./migrations/003_dedup_progress.sql" with { type: "text" };
import migrationSchedules from "./migrations/004_schedules.sql" with { type: "text" };
import migrationGroups from "./migrations/005_groups.sql" with { type: "text" };
import migrationGroupBulk from "./migrations/006_group_bulk.sql" with { type: "text" };
import migrationRetentionIndex from "./migrations/007_retention_index.sql" with { type: "text" };
import migrationConsumerPrefetch from "./migrations/008_consumer_prefetch.sql" with {
  type: "text",
};
import migrationAttributes from "./migrations/009_attributes.sql" with { type: "text" };
import migrationRetainPending from "./migrations/010_retain_pending.sql" with { type: "text" };
import migrationDeadLetterQueue from "./migrations/011_dead_letter_queue.sql" with {
  type: "text",
};
import migrationSqsAttributesTags from "./migrations/012_sqs_attributes_tags.sql" with {
  type: "text",
};
import migrationFlows from "./migrations/013_flows.sql" with { type: "text" };
import migrationGroupSettings from "./migrations/014_group_settings.sql" with { type: "text" };

/** The migrations in order; index i brings the schema to version i + 1. */
export const PG_MIGRATIONS: readonly string[] = [
  migration1,
  migrationQueueSettings,
  migrationDedupProgress,
  migrationSchedules,
  migrationGroups,
  migrationGroupBulk,
  migrationRetentionIndex,
  migrationConsumerPrefetch,
  migrationAttributes,
  migrationRetainPending,
  migrationDeadLetterQueue,
  migrationSqsAttributesTags,
  migrationFlows,
  migrationGroupSettings,
];

/** A schema name tegami accepts: a plain lowercase-or-not identifier, no quoting needed. */
export const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Creates the schema if needed and runs the migrations it has not seen; answers the resulting
 * version. Throws a one-line `Error` when the schema is newer than this program.
 */
export async function migratePg(sql: Sql, schema: string): Promise<number> {
  if (!SCHEMA_NAME.test(schema)) {
    throw new Error(`Cannot use schema "${schema}": expected a plain identifier`);
  }
  return await sql.begin(async (tx) => {
    // Serialises the servers starting together; released at COMMIT or ROLLBACK.
    await tx`SELECT pg_advisory_xact_lock(hashtext(${"tegami migrate " + schema}))`;
    await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await tx.unsafe(`SET LOCAL search_path TO "${schema}"`);
    await tx.unsafe(`CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)`);
    const rows = await tx<{ version: number }[]>`SELECT version FROM schema_version`;
    let version = rows.length === 0 ? 0 : rows[0].version;
    if (rows.length === 0) await tx`INSERT INTO schema_version (version) VALUES (0)`;
    if (version > PG_MIGRATIONS.length) {
      throw new Error(
        `Cannot open schema "${schema}": its version ${version} is newer than this program's ` +
          `(${PG_MIGRATIONS.length}); upgrade tegami`,
      );
    }
    while (version < PG_MIGRATIONS.length) {
      await tx.unsafe(PG_MIGRATIONS[version]);
      version++;
    }
    await tx`UPDATE schema_version SET version = ${version}`;
    return version;
  });
}
