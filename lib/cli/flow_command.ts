/**
 * `tegami flow`: create a flow from a JSON file (the body of `POST /v1/flows`), show one with
 * its nodes, list flows, and cancel one (docs/api.md, "Flows").
 *
 * Exit codes: 0 done, 1 the server refused or could not be reached, 2 a usage error.
 *
 * @module
 */

import { resolveClientConfig } from "../config/client_config.ts";
import type { Flow, FlowSummary } from "../core/flow.ts";
import { JOB_STATES } from "../core/job.ts";
import { apiCaller, ApiRefused } from "./api_call.ts";
import { textTable } from "./table.ts";

/** What the command reads and writes: a part of the client commands' `CommandIO`. */
export interface FlowIO {
  /** Standard input (for `flow create -`). */
  stdin: ReadableStream<Uint8Array>;
  /** Writes to standard output. */
  out(text: string): void;
  /** Writes to standard error. */
  err(text: string): void;
  /** The environment. */
  env: Record<string, string | undefined>;
}

/** A mistake in the command's arguments (exit code 2). */
export class FlowUsageError extends Error {}

/** The answer to creating a flow. */
interface FlowCreatedAnswer {
  id: number;
  deduplicated: boolean;
  jobs: Record<string, number>;
}

/** Runs `tegami flow`; answers the exit code. */
export async function flowCommand(args: string[], io: FlowIO): Promise<number> {
  const { config, rest, values } = resolveClientConfig(args, io.env, {
    limit: { type: "string" },
    after: { type: "string" },
    newest: { type: "boolean" },
    json: { type: "boolean" },
  });
  const call = apiCaller(config);
  const [what, arg, ...extra] = rest;
  if (extra.length > 0) throw new FlowUsageError(`unexpected argument "${extra[0]}"`);
  const json = values.json === true;
  try {
    switch (what) {
      case "create": {
        if (arg === undefined) {
          throw new FlowUsageError(
            "expected create FILE: a JSON file of {key, nodes}, or - for stdin",
          );
        }
        const body = await readInput(arg, io.stdin);
        const created = await call<FlowCreatedAnswer>("POST", "/v1/flows", body);
        const jobs = Object.keys(created.jobs).length;
        if (json) io.out(JSON.stringify(created) + "\n");
        else if (created.deduplicated) {
          io.out(
            `flow ${created.id}: its key is held by this flow (${jobs} jobs); nothing stored\n`,
          );
        } else io.out(`flow ${created.id}: created ${jobs} jobs\n`);
        return 0;
      }
      case "show": {
        const flow = await call<Flow>("GET", `/v1/flows/${flowId(arg, "show")}`);
        io.out(json ? JSON.stringify(flow) + "\n" : flowLines(flow));
        return 0;
      }
      case "cancel": {
        const out = await call<{ id: number; cancelled: number }>(
          "DELETE",
          `/v1/flows/${flowId(arg, "cancel")}`,
        );
        io.out(
          json ? JSON.stringify(out) + "\n" : `flow ${out.id}: cancelled ${out.cancelled} jobs\n`,
        );
        return 0;
      }
      case "list": {
        if (arg !== undefined) throw new FlowUsageError(`unexpected argument "${arg}"`);
        const query = new URLSearchParams();
        if (values.limit !== undefined) query.set("limit", String(values.limit));
        if (values.after !== undefined) query.set("after", String(values.after));
        if (values.newest === true) query.set("order", "newest");
        const page = await call<{ flows: FlowSummary[]; next_after: number | null }>(
          "GET",
          `/v1/flows${query.size === 0 ? "" : `?${query}`}`,
        );
        if (json) {
          // NDJSON for pipes: stdout holds only flows, so the empty case is said on stderr.
          for (const flow of page.flows) io.out(JSON.stringify(flow) + "\n");
          if (page.flows.length === 0) io.err("no flows\n");
        } else io.out(listTable(page.flows));
        if (page.next_after !== null) io.err(`more: --after ${page.next_after}\n`);
        return 0;
      }
      default:
        throw new FlowUsageError(`expected create, show, list or cancel; got "${what ?? ""}"`);
    }
  } catch (error) {
    if (!(error instanceof ApiRefused)) throw error;
    io.err(`tegami flow: ${error.message}\n`);
    return 1;
  }
}

/** The text of FILE, or of stdin for `-`. */
async function readInput(path: string, stdin: ReadableStream<Uint8Array>): Promise<string> {
  if (path === "-") return await new Response(stdin).text();
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    throw new FlowUsageError(`Cannot read ${path}: ${(error as Error).message}`);
  }
}

function flowId(arg: string | undefined, what: string): string {
  if (arg === undefined || !/^[0-9]{1,16}$/.test(arg)) {
    throw new FlowUsageError(`expected ${what} ID, the flow's number`);
  }
  return arg;
}

function iso(ms: number | null): string {
  return ms === null ? "-" : new Date(ms).toISOString();
}

/** `1 blocked, 2 done`: the states that have jobs, in lifecycle order. */
function countsText(counts: FlowSummary["counts"]): string {
  const parts = JOB_STATES.filter((s) => counts[s] > 0).map((s) => `${counts[s]} ${s}`);
  return parts.length === 0 ? "no jobs" : parts.join(", ");
}

/** A flow: one line about it, then its nodes as a table. */
function flowLines(flow: Flow): string {
  const key = flow.key === null ? "" : ` (key ${JSON.stringify(flow.key)})`;
  const head =
    `flow ${flow.id}${key}: ${countsText(flow.counts)}; created ${iso(flow.created_at)}, ` +
    (flow.finished_at === null ? "not finished" : `finished ${iso(flow.finished_at)}`);
  const rows = flow.nodes.map((n) => [
    n.ref,
    String(n.id),
    n.queue,
    n.state,
    n.depends_on.map((e) => e.on_failure === "cancel" ? e.ref : `${e.ref} (${e.on_failure})`)
      .join(", "),
  ]);
  return head + "\n" +
    textTable(["REF", "JOB", "QUEUE", "STATE", "DEPENDS ON"], rows, [
      "left",
      "right",
      "left",
      "left",
      "left",
    ]);
}

function listTable(flows: FlowSummary[]): string {
  if (flows.length === 0) return "no flows\n";
  return textTable(
    ["ID", "KEY", "CREATED", "FINISHED", "JOBS"],
    flows.map((f) => [
      String(f.id),
      f.key ?? "-",
      iso(f.created_at),
      iso(f.finished_at),
      countsText(f.counts),
    ]),
    ["right", "left", "left", "left", "left"],
  );
}
