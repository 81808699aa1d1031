/**
 * The permission check of the tokens file, as ssh checks a private key: a file that others on
 * the machine can read, holding plain tokens, gives those tokens away. tegami still starts (the
 * operator may have reasons) but says so, and names the fix.
 *
 * @module
 */

/**
 * The warning for a tokens file readable by group or others that holds at least one plain
 * `token` entry, or null when there is nothing to say (owner-only file, only `sha256` entries,
 * or a system without Unix modes).
 */
export function tokensFileWarning(path: string, text: string): string | null {
  let mode: number | null;
  try {
    mode = Deno.statSync(path).mode;
  } catch {
    return null;
  }
  if (mode === null || (mode & 0o077) === 0) return null;
  let entries: unknown;
  try {
    entries = JSON.parse(text);
  } catch {
    return null;
  }
  const plain = Array.isArray(entries) &&
    entries.some((e) => typeof e === "object" && e !== null && "token" in e);
  if (!plain) return null;
  const octal = (mode & 0o777).toString(8).padStart(3, "0");
  return `Tokens file "${path}" is readable by others (mode ${octal}) and holds plain tokens: ` +
    `run chmod 600 on it, or store each token as its "sha256" digest instead`;
}
