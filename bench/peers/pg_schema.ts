/**
 * The PostgreSQL the bench's PostgreSQL rows share (tegami on PostgreSQL and pg-boss), and the
 * fresh schema each system gets per workload, dropped after.
 *
 * @module
 */

/** The URL of the PostgreSQL both pg-boss and tegami's PostgreSQL rows use. */
export function benchPgUrl(): string {
  return Deno.env.get("TEGAMI_BENCH_PG_URL") ?? "postgres://postgres@127.0.0.1:5432/postgres";
}

/** A fresh schema name for one workload of one system. */
export function freshSchema(prefix: string): string {
  return `pgbench_${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
}

/** Drops `schema` on the bench's PostgreSQL, with everything in it. */
export async function dropSchema(schema: string): Promise<void> {
  const { default: postgres } = await import("postgres");
  const sql = postgres(benchPgUrl(), { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await sql.end();
  }
}
