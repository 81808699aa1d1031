/**
 * The `Origin` check of the WebSocket upgrade: browsers send `Origin`, and a page from another
 * site must not be able to drive a consumer session with the user's network position. Same
 * origin (the Origin's host equals the `Host` header) is allowed; others only if listed.
 *
 * @module
 */

/** True when a request's `Origin` (if any) may open a WebSocket. */
export function originAllowed(
  origin: string | null,
  host: string | null,
  allowed: readonly string[] | "*",
): boolean {
  if (origin === null) return true; // not a browser: nothing to check
  if (allowed === "*") return true;
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  if (host !== null && parsed.host.toLowerCase() === host.toLowerCase()) return true;
  return allowed.includes(parsed.origin);
}
