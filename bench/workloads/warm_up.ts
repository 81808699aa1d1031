/**
 * A short W1 on a queue of its own, run before measuring so that no system is measured cold:
 * tegami's JIT has compiled its hot paths, connections and caches are set up. Its figures are
 * thrown away.
 *
 * @module
 */

import type { Target } from "../peers/peer.ts";
import { endToEnd } from "./end_to_end.ts";

/** Jobs of the warm-up, by default. */
export const WARM_UP_JOBS = 5000;

/**
 * Runs the warm-up on `target`. (tegami keeps getting faster over its first hundred thousand jobs
 * or so, as the JIT settles, so a short warm-up still leaves its figures on the conservative side.)
 */
export async function warmUp(target: Target, jobs = WARM_UP_JOBS): Promise<void> {
  await endToEnd(target, { queue: "warmup", jobs });
}
