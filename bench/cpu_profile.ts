/**
 * Summarises a V8 CPU profile (`.cpuprofile`, as written by `deno run --cpu-prof` or
 * `deno task bench --cpu-prof DIR`): the functions with the most self time and the most
 * inclusive time, as shares of the whole profile, idle included.
 *
 *     deno run -A bench/cpu_profile.ts FILE [--top N] [--after NAME] [--per-job CORES/JOBS]
 *
 * `--after NAME` counts only the samples after the last one with function NAME on its stack (a
 * workload's own phase, after a fill: `--after '#insertAll'`). `--per-job CORES/JOBS` (the main
 * thread's cores and the jobs/s of the same run, from the bench's table) adds the busy time by
 * kind, with tegami's own JavaScript by folder of `lib/`, in µs per job.
 *
 * @module
 */

import { parseArgs } from "node:util";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * Where a sample's own time went: SQLite (node:sqlite's statement calls), the runtime's own
 * JavaScript (`ext:`) and native ops (`op_…`), the program's code (by top folder: `lib`,
 * `bench`…), V8 (GC, compiled code without a frame), or idle.
 */
export function categoryOf(callFrame: ProfileNode["callFrame"]): string {
  const { functionName, url } = callFrame;
  if (url === "") {
    if (["run", "get", "all", "exec", "iterate"].includes(functionName)) return "SQLite statements";
    if (functionName.startsWith("op_")) return "runtime native ops";
    if (functionName === "(idle)") return "idle";
    if (functionName === "(garbage collector)") return "V8 garbage collection";
    return "V8 other";
  }
  if (url.startsWith("ext:") || url.startsWith("node:")) return "runtime JavaScript";
  const folder = url.match(/\/(lib|bench|tests|examples)\//);
  return folder === null ? "other JavaScript" : `${folder[1]}/ JavaScript`;
}

/** Self and inclusive microseconds per function (`name file:line`), and the total. */
export interface ProfileSummary {
  /** Microseconds sampled in all. */
  totalUs: number;
  /** Time spent in the function itself. */
  self: Map<string, number>;
  /** Time spent in the function and everything it called (each stack counted once). */
  inclusive: Map<string, number>;
  /** Self time by {@linkcode categoryOf}. */
  categories: Map<string, number>;
  /** Self time by {@linkcode categoryOf}, with tegami's own JavaScript by folder (`lib/http/`). */
  folders: Map<string, number>;
}

/** What {@linkcode summarise} counts. */
export interface SummaryOptions {
  /** Count only the samples after the last one with a function of this name on its stack. */
  after?: string;
}

function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url.split("/").slice(-2).join("/");
  return `${functionName || "(anonymous)"} ${file}:${lineNumber + 1}`;
}

/** Where a sample's own time went, as {@linkcode categoryOf} says, with `lib/` split by folder. */
function folderOf(callFrame: ProfileNode["callFrame"]): string {
  const folder = callFrame.url.match(/\/lib\/([^/]+)\//);
  return folder === null ? categoryOf(callFrame) : `lib/${folder[1]}/ JavaScript`;
}

/** Adds up a profile's samples per function. */
export function summarise(profile: Profile, options: SummaryOptions = {}): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  let from = 0;
  if (options.after !== undefined) {
    profile.samples.forEach((id, i) => {
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        if (byId.get(at)!.callFrame.functionName === options.after) {
          from = i + 1;
          return;
        }
      }
    });
  }
  const perNode = new Map<number, number>();
  let totalUs = 0;
  for (let i = from; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    perNode.set(id, (perNode.get(id) ?? 0) + profile.timeDeltas[i]);
    totalUs += profile.timeDeltas[i];
  }
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const categories = new Map<string, number>();
  const folders = new Map<string, number>();
  for (const [id, us] of perNode) {
    const node = byId.get(id)!;
    const category = categoryOf(node.callFrame);
    categories.set(category, (categories.get(category) ?? 0) + us);
    const folder = folderOf(node.callFrame);
    folders.set(folder, (folders.get(folder) ?? 0) + us);
    const name = frameName(node);
    self.set(name, (self.get(name) ?? 0) + us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = frameName(byId.get(at)!);
      if (seen.has(frame)) continue; // recursion: count a stack once
      seen.add(frame);
      inclusive.set(frame, (inclusive.get(frame) ?? 0) + us);
    }
  }
  return { totalUs, self, inclusive, categories, folders };
}

/**
 * The busy time by kind (idle left out) as µs per job, given the main thread's `cores` and the
 * `jobsPerSecond` of the same run: each kind's share of the busy samples times the busy CPU per job.
 */
export function perJob(
  summary: ProfileSummary,
  cores: number,
  jobsPerSecond: number,
): Map<string, number> {
  const busyUs = summary.totalUs - (summary.folders.get("idle") ?? 0);
  const busyPerJob = 1e6 * cores / jobsPerSecond;
  const out = new Map<string, number>();
  for (const [kind, us] of summary.folders) {
    if (kind !== "idle") out.set(kind, busyPerJob * us / busyUs);
  }
  return out;
}

function table(title: string, times: Map<string, number>, totalUs: number, top: number): string {
  const rows = [...times].sort((a, b) => b[1] - a[1]).slice(0, top);
  return [
    title,
    ...rows.map(([name, us]) => `${(100 * us / totalUs).toFixed(1).padStart(6)} %  ${name}`),
  ].join("\n");
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    options: {
      top: { type: "string", default: "30" },
      after: { type: "string" },
      "per-job": { type: "string" },
    },
    allowPositionals: true,
  });
  const rate = values["per-job"]?.match(/^([0-9.]+)\/([0-9.]+)$/);
  if (positionals.length !== 1 || (values["per-job"] !== undefined && !rate)) {
    console.error(
      "usage: deno run -A bench/cpu_profile.ts FILE.cpuprofile [--top N] [--after NAME] " +
        "[--per-job CORES/JOBS]",
    );
    Deno.exit(2);
  }
  const summary = summarise(JSON.parse(await Deno.readTextFile(positionals[0])), {
    after: values.after,
  });
  const top = Number(values.top);
  console.log(`${(summary.totalUs / 1e6).toFixed(2)} s sampled`);
  if (rate) {
    const [cores, jobs] = [Number(rate[1]), Number(rate[2])];
    const rows = [...perJob(summary, cores, jobs)].sort((a, b) => b[1] - a[1]);
    console.log(`\nbusy time by kind, µs per job (${cores} cores at ${jobs} jobs/s)`);
    for (const [kind, us] of rows) console.log(`${us.toFixed(1).padStart(7)}  ${kind}`);
  }
  console.log(table("\nself time by kind", summary.categories, summary.totalUs, top));
  console.log(table("\nself time", summary.self, summary.totalUs, top));
  console.log(table("\ninclusive time", summary.inclusive, summary.totalUs, top));
}
