/**
 * The flow crash campaign: real servers (`main.ts serve` in child processes) under a load of
 * small flows — chains, fan-ins, fan-outs that fan in again, and small random graphs of 3 to 20
 * nodes, most edges `cancel`, some `ignore` or `run` — SIGKILLed at random instants and restarted on the same database,
 * with every operation recorded; after the last kill the queue is drained, the servers stopped
 * cleanly, the stored jobs read with the store-neutral inspector, and `flow_checker.ts` judges
 * the history.
 *
 * Producers create flows with `POST /v1/flows`, each with a key of its own; an answer that never
 * came (a connection cut by a kill, a timeout, a 503) is an unknown outcome, and the same flow is
 * sent again with the same key (to the next server, with several) until a definite answer: the
 * key makes a retry answer the flow stored, if it was. Consumers hold WebSockets with short
 * leases and, per delivery, ack after 0–20 ms (most), nack for a retry (5 %), nack it dead (2 %:
 * its dependents are cancelled, and theirs), never answer (3 %: the lease runs out), or drop
 * their socket (1 %); an ack without an answer is sent again with the same token half of the
 * time. Every job may be delivered 1 000 times, so none dies but by a dead nack.
 *
 * On SQLite there is one server; on PostgreSQL there may be several on one schema, producers and
 * consumers spread over them, one killed at a time.
 *
 * @module
 */

import { finalRead, Fleet } from "./fleet.ts";
import { outcomeUnknown, seededRandom } from "./campaign.ts";
import type { Fault } from "./faulty_store.ts";
import {
  checkFlows,
  type EdgeRule,
  type FlowEvent,
  type FlowReport,
  type SentNode,
} from "./flow_checker.ts";

/** The server of the positive controls: `tegami serve` over a store broken on purpose. */
const FAULTY_SERVER = new URL("./faulty_server.ts", import.meta.url).pathname;

/** Options of {@linkcode runFlowCampaign}. */
export interface FlowCampaignOptions {
  /** How many times a server is SIGKILLed. */
  cycles: number;
  /** How long the servers run under load before each kill, ms (uniform). @default [250, 800] */
  upMs?: [number, number];
  /** Producers of flows. @default 3 */
  producers?: number;
  /** WebSocket consumers. @default 3 */
  consumers?: number;
  /** Lease length per consumer, ms (uniform). @default [300, 800] */
  leaseMs?: [number, number];
  /** A fault the server commits on purpose (`faulty_server.ts`), or null. @default null */
  fault?: Fault | null;
  /** More `serve` flags. @default [] */
  serverArgs?: string[];
  /** Seed of the random choices (timings still vary). @default Date.now() */
  seed?: number;
  /** The database: a SQLite file (a temp dir is made and removed when absent) or a `postgres://` URL. */
  db?: string;
  /** The PostgreSQL schema (`--pg-schema`). @default "tegami" */
  schema?: string;
  /** Servers on the database, killed one at a time (more than one needs PostgreSQL). @default 1 */
  instances?: number;
  /** The queue of every node. @default "flows" */
  queue?: string;
  /** How long the final drain may take, ms. @default 30_000 */
  drainTimeoutMs?: number;
  /** Stops the kills early (the drain and check still run). */
  signal?: AbortSignal;
  /** Progress lines. @default none */
  log?: (line: string) => void;
}

/** What a flow campaign did and found. */
export interface FlowCampaignResult {
  /** Every event. */
  history: FlowEvent[];
  /** The checker's verdict. */
  report: FlowReport;
  /** Kills carried out. */
  cycles: number;
  /** Wall time, ms. */
  wallMs: number;
  /** Whether the final SIGTERM stopped every server with exit code 0. */
  cleanExit: boolean;
  /** Each server's stderr of its last run. */
  lastStderr: string;
}

/** How long one HTTP request may take before its outcome counts as unknown, ms. */
const REQUEST_TIMEOUT_MS = 5000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A flow of 3 to 20 nodes: a chain, a fan-in, a root fanned out and in again, or a small random
 * graph whose every node after the first depends on 1 to 3 earlier ones; 70 % of the edges
 * `cancel`, 15 % `ignore`, 15 % `run`.
 */
export function flowShape(random: () => number): SentNode[] {
  const rule = (): EdgeRule => {
    const r = random();
    return r < 0.7 ? "cancel" : r < 0.85 ? "ignore" : "run";
  };
  return graphShape(random).map((node) => ({ ...node, rules: node.deps.map(rule) }));
}

function graphShape(random: () => number): SentNode[] {
  const int = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));
  const r = random();
  if (r < 0.25) {
    const n = int(3, 8);
    return Array.from(
      { length: n },
      (_, i) => ({ ref: `s${i}`, deps: i === 0 ? [] : [`s${i - 1}`] }),
    );
  }
  if (r < 0.5) {
    const leaves = Array.from({ length: int(2, 10) }, (_, i) => ({ ref: `l${i}`, deps: [] }));
    return [...leaves, { ref: "all", deps: leaves.map((leaf) => leaf.ref) }];
  }
  if (r < 0.75) {
    const middle = Array.from({ length: int(1, 18) }, (_, i) => ({ ref: `m${i}`, deps: ["root"] }));
    return [{ ref: "root", deps: [] }, ...middle, {
      ref: "all",
      deps: middle.map((node) => node.ref),
    }];
  }
  const n = int(4, 12);
  const nodes: SentNode[] = [{ ref: "n0", deps: [] }];
  for (let i = 1; i < n; i++) {
    const deps = new Set<string>();
    const count = int(1, Math.min(3, i));
    while (deps.size < count) deps.add(`n${int(0, i - 1)}`);
    nodes.push({ ref: `n${i}`, deps: [...deps] });
  }
  return nodes;
}

/** Runs a flow campaign; see the module doc. */
export async function runFlowCampaign(options: FlowCampaignOptions): Promise<FlowCampaignResult> {
  const started = Date.now();
  const random = seededRandom(options.seed ?? started);
  const between = ([low, high]: [number, number]) => low + random() * (high - low);
  const log = options.log ?? (() => {});
  const queue = options.queue ?? "flows";
  const ownDir = options.db === undefined
    ? await Deno.makeTempDir({ prefix: "tegami-flow-torture-" })
    : null;
  const db = options.db ?? `${ownDir}/tegami.db`;
  const events: FlowEvent[] = [];
  const add = (event: DistributiveOmit<FlowEvent, "at">) =>
    events.push({ ...event, at: Date.now() } as FlowEvent);
  let opSeq = 0;
  const args = ["--db", db, ...(options.serverArgs ?? [])];
  if (options.schema !== undefined) args.push("--pg-schema", options.schema);
  if (options.fault) args.push("--fault", options.fault);
  const script = options.fault ? FAULTY_SERVER : undefined;
  const instances = options.instances ?? 1;
  if (instances > 1 && !/^postgres(ql)?:\/\//.test(db)) {
    throw new Error("several servers on one database need PostgreSQL");
  }

  // ---- the servers ----
  const fleet = new Fleet({
    args,
    script,
    instances,
    log,
    onStart: (server, epoch) => add({ type: "server_start", epoch, server }),
  });
  const urlOf = (i: number) => fleet.urlOf(i);

  // ---- producers ----
  let producing = true;
  const create = async (p: number, key: string, nodes: SentNode[]) => {
    const body = JSON.stringify({
      key,
      nodes: nodes.map((node) => ({
        ref: node.ref,
        queue,
        payload: { uid: `${key}/${node.ref}` },
        max_attempts: 1000,
        // Both spellings of a cancel edge: a ref, and {ref, on_failure}.
        depends_on: node.deps.map((dep, i) => {
          const rule = node.rules?.[i] ?? "cancel";
          return rule === "cancel" && i % 2 === 0 ? dep : { ref: dep, on_failure: rule };
        }),
      })),
    });
    for (let attempt = 0;; attempt++) {
      const op = ++opSeq;
      add({ type: "flow_send", op, key, nodes });
      try {
        const response = await fetch(`${urlOf(p + attempt)}/v1/flows`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const text = await response.text();
        if (response.ok) {
          const answer = JSON.parse(text);
          add({
            type: "flow_ok",
            op,
            id: answer.id,
            deduplicated: answer.deduplicated,
            jobs: answer.jobs,
          });
          return;
        }
        let code = "";
        let message = "";
        try {
          ({ code, message } = JSON.parse(text).error);
        } catch {
          code = text.slice(0, 80);
        }
        if (outcomeUnknown(message) || response.status === 503) {
          add({ type: "flow_info", op, error: `${response.status} ${code}` });
        } else {
          add({ type: "flow_fail", op, status: response.status, code });
          return;
        }
      } catch (error) {
        add({ type: "flow_info", op, error: String(error).slice(0, 120) });
      }
      if (!producing && attempt >= 200) return;
      await sleep(20 + random() * 80);
    }
  };
  const producer = async (p: number) => {
    let n = 0;
    while (producing) {
      await create(p, `${queue}/p${p}/${n++}`, flowShape(random));
      await sleep(5 + random() * 30);
    }
  };

  // ---- consumers ----
  let draining = false;
  let consuming = true;
  let working = 0;
  let connSeq = 0;
  class Consumer {
    readonly index: number;
    readonly leaseMs: number;
    readonly prefetch: number;
    socket: WebSocket | null = null;
    sessions = 0;
    readonly #waiting = new Map<number, (outcome: string) => void>();
    #loop: Promise<void> | null = null;

    constructor(index: number) {
      this.index = index;
      this.leaseMs = Math.round(between(options.leaseMs ?? [300, 800]));
      this.prefetch = 1 + Math.floor(random() * 10);
    }

    get busy(): number {
      return this.#waiting.size;
    }

    run(): void {
      this.#loop = (async () => {
        while (consuming) {
          await this.#session();
          if (consuming) await sleep(50 + random() * 150);
        }
      })();
    }

    async stop(): Promise<void> {
      this.socket?.close();
      await this.#loop;
    }

    #session(): Promise<void> {
      return new Promise((resolve) => {
        const url = urlOf(this.index + this.sessions++);
        let socket: WebSocket;
        try {
          socket = new WebSocket(url.replace(/^http/, "ws") + "/v1/ws");
        } catch {
          resolve();
          return;
        }
        const openTimer = setTimeout(() => socket.close(), REQUEST_TIMEOUT_MS);
        let conn = 0;
        socket.onopen = () => {
          clearTimeout(openTimer);
          conn = ++connSeq;
          if (!consuming) {
            socket.close();
            return;
          }
          this.socket = socket;
          socket.send(JSON.stringify({
            op: "subscribe",
            ref: "subscribe",
            queue,
            prefetch: this.prefetch,
            lease_ms: this.leaseMs,
          }));
        };
        socket.onmessage = (event) => {
          const frame = JSON.parse(String(event.data)) as Record<string, unknown>;
          this.#onFrame(frame, conn, socket);
        };
        socket.onerror = () => {};
        socket.onclose = () => {
          clearTimeout(openTimer);
          if (this.socket === socket) this.socket = null;
          for (const [op, answer] of this.#waiting) {
            this.#waiting.delete(op);
            add({ type: "settle_info", op, error: "socket closed" });
            answer("info");
          }
          resolve();
        };
      });
    }

    #onFrame(frame: Record<string, unknown>, conn: number, socket: WebSocket): void {
      if (frame.op === "job") {
        const lease = frame.lease as { token: string };
        const payload = frame.payload as { uid?: unknown };
        const prerequisites = frame.prerequisites as
          | { ref: string; id: number; state: string }[]
          | undefined;
        add({
          type: "deliver",
          conn,
          id: frame.id as number,
          uid: typeof payload?.uid === "string" ? payload.uid : "?",
          token: lease.token,
          attempt: frame.attempt as number,
          flow: (frame.flow as { id: number; ref: string } | undefined) ?? null,
          prerequisites: prerequisites?.map(({ ref, id, state }) => ({ ref, id, state })) ?? null,
        });
        this.#handle(frame.id as number, lease.token);
        if (!draining && random() < 0.01) socket.close();
        return;
      }
      if ((frame.op === "ok" || frame.op === "error") && typeof frame.ref === "number") {
        const answer = this.#waiting.get(frame.ref);
        if (answer === undefined) return;
        this.#waiting.delete(frame.ref);
        if (frame.op === "ok") {
          add({ type: "settle_ok", op: frame.ref });
          answer("ok");
        } else if (outcomeUnknown(frame.message)) {
          add({ type: "settle_info", op: frame.ref, error: String(frame.message) });
          answer("info");
        } else {
          add({ type: "settle_fail", op: frame.ref, code: String(frame.code) });
          answer("fail");
        }
      }
    }

    async #handle(id: number, token: string): Promise<void> {
      working++;
      try {
        const r = random();
        if (!draining && r < 0.03) return; // never answered: the lease runs out
        const nack = !draining && r < 0.10;
        const dead = nack && r < 0.05;
        await sleep(random() * (draining ? 5 : 20));
        const outcome = await this.#settle(nack ? "nack" : "ack", id, token, dead);
        if (outcome === "info" && !nack && random() < 0.5) await this.#settle("ack", id, token);
      } finally {
        working--;
      }
    }

    async #settle(kind: "ack" | "nack", id: number, token: string, dead = false): Promise<string> {
      // After a restart the ack goes on the new socket: leases survive a kill.
      while (this.socket === null || this.socket.readyState !== WebSocket.OPEN) {
        if (!consuming) return "none";
        await sleep(25);
      }
      const socket = this.socket;
      const op = ++opSeq;
      const frame: Record<string, unknown> = { op: kind, ref: op, id, token };
      if (dead) frame.dead = true;
      else if (kind === "nack") frame.delay_ms = Math.floor(random() * 50);
      add({ type: "settle", op, kind, id, token, dead });
      const answered = new Promise<string>((resolve) => this.#waiting.set(op, resolve));
      socket.send(JSON.stringify(frame));
      const timer = setTimeout(() => {
        const answer = this.#waiting.get(op);
        if (answer === undefined) return;
        this.#waiting.delete(op);
        add({ type: "settle_info", op, error: "no answer in time" });
        answer("info");
      }, REQUEST_TIMEOUT_MS);
      const outcome = await answered;
      clearTimeout(timer);
      return outcome;
    }
  }

  // ---- the run ----
  let cycles = 0;
  let cleanExit = false;
  let lastStderr = "";
  const consumers: Consumer[] = [];
  try {
    for (let i = 0; i < instances; i++) await fleet.start(i);
    for (let i = 0; i < (options.consumers ?? 3); i++) {
      const consumer = new Consumer(i);
      consumers.push(consumer);
      consumer.run();
    }
    const producers = Array.from({ length: options.producers ?? 3 }, (_, p) => producer(p));
    while (cycles < options.cycles && !options.signal?.aborted) {
      await sleep(between(options.upMs ?? [250, 800]));
      const i = Math.floor(random() * instances);
      const running = fleet.take(i);
      if (running === null) continue;
      add({ type: "server_kill", epoch: fleet.epoch, server: i });
      running.kill("SIGKILL");
      await running.exited();
      await fleet.start(i);
      cycles++;
      if (cycles % 10 === 0) log(`${cycles} kills, ${events.length} events`);
    }

    // ---- drain: every stored node must end, blocked ones included ----
    draining = true;
    producing = false;
    await Promise.all(producers);
    const deadline = Date.now() + (options.drainTimeoutMs ?? 30_000);
    let quiet = 0;
    while (quiet < 3 && Date.now() < deadline) {
      await sleep(100);
      try {
        const response = await fetch(`${urlOf(0)}/v1/queues/${queue}`);
        const c = (await response.json()).counts;
        const busy = working + consumers.reduce((n, consumer) => n + consumer.busy, 0);
        quiet = c.pending + c.delayed + c.leased + c.blocked === 0 && busy === 0 ? quiet + 1 : 0;
      } catch {
        quiet = 0;
      }
    }
    if (quiet < 3) log("drain timed out");
    consuming = false;
    await Promise.all(consumers.map((consumer) => consumer.stop()));
    ({ clean: cleanExit, stderr: lastStderr } = await fleet.stopAll());

    // ---- the database, read after the servers stopped ----
    const { integrity, jobs } = await finalRead(db, options.schema, queue);
    add({ type: "final", integrity, jobs });
  } finally {
    producing = false;
    consuming = false;
    for (const consumer of consumers) consumer.socket?.close();
    await fleet.dispose();
    if (ownDir !== null) await Deno.remove(ownDir, { recursive: true });
  }
  return {
    history: events,
    report: checkFlows(events),
    cycles,
    wallMs: Date.now() - started,
    cleanExit,
    lastStderr,
  };
}

/** `Omit` over each member of a union. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
