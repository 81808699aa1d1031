/**
 * The servers of a crash campaign (campaign.ts, flow_campaign.ts): `tegami serve` processes on
 * one database, each in a slot; a server that exits while still in its slot was not stopped by
 * the campaign (which empties the slot first) and is started again; the final stop collects what
 * each wrote to stderr; and, once they are stopped, the campaign's queue as the database holds it.
 *
 * @module
 */

import { type ServerProcess, spawnServer } from "../helpers/process_server.ts";
import { openInspector } from "../helpers/inspector.ts";

/** One slot: its process (null while down) and URL ("" while down). */
export interface Slot {
  /** The running process, or null. */
  process: ServerProcess | null;
  /** Its URL, or "". */
  url: string;
}

/** What the fleet tells its campaign. */
export interface FleetOptions {
  /** The servers' arguments. */
  args: string[];
  /** A server script to run instead of the program (the faulty server), if any. */
  script?: string;
  /** How many servers. */
  instances: number;
  /** A server started (its epoch counts every start). */
  onStart(server: number, epoch: number): void;
  /** A server exited by itself (`epoch`: the start it ended). */
  onDied?(server: number, epoch: number, code: number): void;
  /** Progress lines. */
  log(line: string): void;
}

/** A campaign's servers. */
export class Fleet {
  /** The slots, by server number. */
  readonly servers: Slot[];
  /** Starts so far. */
  epoch = 0;
  /** Set once the final stop begins: a server that dies then is not started again. */
  finalStop = false;
  readonly #o: FleetOptions;
  /** The stderr of servers that exited by themselves. */
  readonly #deaths: string[] = [];

  /** A fleet of `options.instances` empty slots. */
  constructor(options: FleetOptions) {
    this.#o = options;
    this.servers = Array.from({ length: options.instances }, () => ({ process: null, url: "" }));
  }

  /** Starts server `i` (it is started again whenever it exits by itself). */
  async start(i: number): Promise<void> {
    // NO_COLOR: a dead server's stderr goes into reports as plain text.
    const process = await spawnServer(this.#o.args, {
      script: this.#o.script,
      env: { NO_COLOR: "1" },
    });
    this.servers[i] = { process, url: process.url };
    const started = ++this.epoch;
    this.#o.onStart(i, started);
    process.exited().then(async ({ code, stderr }) => {
      if (this.servers[i].process !== process) return;
      this.servers[i] = { process: null, url: "" };
      this.#o.onDied?.(i, started, code);
      this.#deaths.push(`[server ${i} died with code ${code}]\n${stderr.slice(-4000)}`);
      this.#o.log(`server ${i} exited by itself with code ${code}:\n${stderr.slice(-2500)}`);
      // Started again until it listens (PostgreSQL may be restarting: startup then fails).
      while (!this.finalStop) {
        try {
          await this.start(i);
          return;
        } catch (error) {
          this.#o.log(`server ${i} did not start again: ${String(error).slice(0, 300)}`);
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    });
  }

  /** Empties server `i`'s slot and answers its process (null when it is down). */
  take(i: number): ServerProcess | null {
    const running = this.servers[i].process;
    if (running !== null) this.servers[i] = { process: null, url: "" };
    return running;
  }

  /** The URL of server `i` (modulo their number), or of the next one up; "" when none is. */
  urlOf(i: number): string {
    const n = this.servers.length;
    for (let k = 0; k < n; k++) {
      const url = this.servers[(i + k) % n].url;
      if (url !== "") return url;
    }
    return "";
  }

  /** Which server a URL is (for the history). */
  serverOf(url: string): number {
    return Math.max(0, this.servers.findIndex((s) => s.url === url));
  }

  /**
   * Stops every server with SIGTERM: `clean` when each was up and exited 0; `stderr`, what the
   * dead and the stopped ones wrote.
   */
  async stopAll(): Promise<{ clean: boolean; stderr: string }> {
    this.finalStop = true;
    let clean = true;
    const stderrs: string[] = [...this.#deaths];
    const several = this.servers.length > 1;
    for (let i = 0; i < this.servers.length; i++) {
      const last = this.take(i);
      if (last === null) {
        clean = false;
        continue;
      }
      last.kill("SIGTERM");
      const exit = await last.exited();
      clean &&= exit.code === 0;
      stderrs.push(several ? `[server ${i}]\n${exit.stderr}` : exit.stderr);
    }
    return { clean, stderr: stderrs.join("\n") };
  }

  /** Ends whatever still runs (a paused one resumed first), after a failure. */
  async dispose(): Promise<void> {
    this.finalStop = true;
    for (const { process } of this.servers) {
      if (process === null) continue;
      process.kill("SIGCONT");
      await process[Symbol.asyncDispose]();
    }
  }
}

/** One job as the final read sees it: its uid (from its payload), state and attempts. */
export interface FinalJob {
  /** The job's id. */
  id: number;
  /** The uid its payload carries, "?" when it has none. */
  uid: string;
  /** Its state. */
  state: string;
  /** Its deliveries. */
  attempts: number;
}

/** The database's integrity and `queue`'s jobs, read once the servers have stopped. */
export async function finalRead(
  db: string,
  schema: string | undefined,
  queue: string,
): Promise<{ integrity: string; jobs: FinalJob[] }> {
  await using inspector = openInspector(db, schema);
  const integrity = await inspector.integrity();
  const jobs = (await inspector.jobs(queue)).map((row) => {
    let uid = "?";
    try {
      uid = JSON.parse(row.payload).uid ?? "?";
    } catch {
      // a payload that is not JSON: reported as unexpected
    }
    return { id: row.id, uid, state: row.state, attempts: row.attempts };
  });
  return { integrity, jobs };
}
