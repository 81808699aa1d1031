/**
 * The process's limit on open file descriptors (`RLIMIT_NOFILE`), read from
 * `/proc/self/limits`. Deno raises the soft limit to the hard one at startup by itself (measured
 * on 2.9.6: started under `prlimit --nofile=1024:4096`, the process reports 4096), so there is
 * nothing left to raise; what tegami needs is the number, to size its connection limit so the
 * accept path never runs out. Deno lets only `--allow-all` read `/proc/self`, so under narrower
 * permissions (the `start` task, the compiled binary) the answer is null, and the front door
 * learns the limit from the first EMFILE instead.
 *
 * @module
 */

/** The soft descriptor limit, or null where it cannot be read (not Linux, no permission). */
export function descriptorLimit(): number | null {
  let text: string;
  try {
    text = Deno.readTextFileSync("/proc/self/limits");
  } catch {
    return null;
  }
  const line = text.split("\n").find((l) => l.startsWith("Max open files"));
  const soft = line?.slice("Max open files".length).trim().split(/\s+/)[0];
  if (soft === undefined || soft === "unlimited") return null;
  const value = Number(soft);
  return Number.isSafeInteger(value) && value > 0 ? value : null;
}
