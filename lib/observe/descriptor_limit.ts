/**
 * The process's limit on open file descriptors (`RLIMIT_NOFILE`), read from
 * `/proc/self/limits`. Deno raises the soft limit to the hard one at startup by itself (measured
 * on 2.9.6: started under `prlimit --nofile=1024:4096`, the process reports 4096), so there is
 * nothing left to raise; what tegami needs is the number, to size its connection limit so the
 * accept path never runs out. Deno lets only `--allow-all` read `/proc/self`, so under narrower
 * permissions (the `start` task, the compiled binary) the limit is unknown, and the front door
 * learns it from the first EMFILE instead. Deno has no `getrlimit`; FFI or running `ulimit`
 * would each need a permission broader than the one missing here.
 *
 * @module
 */

/** The soft descriptor limit, or why it is unknown. */
export type DescriptorLimit =
  | { readonly limit: number }
  | { readonly limit: null; readonly reason: string };

/** Reads a file's text; throws as `Deno.readTextFileSync` does. */
export type ReadText = (path: string) => string;

const LIMITS_FILE = "/proc/self/limits";

/**
 * The soft descriptor limit from `/proc/self/limits`, or `null` with the reason it cannot be
 * known (no permission, not Linux, no limit).
 */
export function descriptorLimit(read: ReadText = Deno.readTextFileSync): DescriptorLimit {
  let text: string;
  try {
    text = read(LIMITS_FILE);
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied) {
      return { limit: null, reason: `reading ${LIMITS_FILE} needs --allow-all` };
    }
    if (error instanceof Deno.errors.NotFound) {
      return { limit: null, reason: `no ${LIMITS_FILE} on this system` };
    }
    return { limit: null, reason: `cannot read ${LIMITS_FILE}: ${(error as Error).message}` };
  }
  const line = text.split("\n").find((l) => l.startsWith("Max open files"));
  const soft = line?.slice("Max open files".length).trim().split(/\s+/)[0];
  if (soft === "unlimited") return { limit: null, reason: "unlimited" };
  const value = Number(soft);
  return Number.isSafeInteger(value) && value > 0
    ? { limit: value }
    : { limit: null, reason: `no "Max open files" line in ${LIMITS_FILE}` };
}

/**
 * The limit as the `tegami started` line shows it: the number, or `unknown` with its reason and
 * what the server does instead.
 */
export function describeDescriptorLimit(known: DescriptorLimit): number | string {
  return known.limit ??
    `unknown (${known.reason}; the connection limit is lowered at the first EMFILE)`;
}
