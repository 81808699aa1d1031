/**
 * What a PostgreSQL URL must be before anything connects: read without the driver, so that the
 * configuration refuses a mistake in `--db` (exit 2, which a restart cannot fix) and a SQLite
 * server never loads the driver to tell.
 *
 * @module
 */

/** Whether `db` names a PostgreSQL database rather than a SQLite file. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

/** The `sslmode` values libpq knows, the ones tegami's driver follows. */
const SSL_MODES: ReadonlySet<string> = new Set([
  "disable",
  "allow",
  "prefer",
  "require",
  "verify-ca",
  "verify-full",
]);

/** The modes that check the server's certificate, the only ones `sslrootcert` makes sense with. */
const CHECKING_MODES: ReadonlySet<string> = new Set(["verify-ca", "verify-full"]);

/**
 * What is wrong with a `postgres://` URL, in words that never repeat its password; null when
 * nothing is. Checks that it parses as a URL, that its `sslmode` is one libpq knows, and that
 * `sslrootcert` (other than `system`) comes with a mode that checks certificates.
 */
export function postgresUrlProblem(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "not a valid URL (postgres://user:password@host:port/database)";
  }
  const mode = parsed.searchParams.get("sslmode");
  if (mode !== null && !SSL_MODES.has(mode)) {
    return `sslmode=${mode.slice(0, 40)} is not one of ${[...SSL_MODES].join(", ")}`;
  }
  const root = parsed.searchParams.get("sslrootcert");
  const checking = mode ?? "verify-full";
  if (root !== null && root !== "system" && !CHECKING_MODES.has(checking)) {
    return `sslrootcert needs sslmode=verify-full or sslmode=verify-ca ` +
      `(sslmode=${checking} checks no certificate)`;
  }
  return null;
}
