/**
 * The crash campaign: real servers (`main.ts serve` in child processes) under load from HTTP
 * producers and WebSocket consumers, disrupted again and again — SIGKILLed and restarted on the
 * same database, or SIGSTOPped and SIGCONTed, or the database server itself restarted as after
 * a crash — with every operation recorded in a {@linkcode History}. After the last disruption
 * the queue is drained, the servers stopped cleanly, and the stored jobs read with the
 * store-neutral inspector; then {@linkcode check} judges the history.
 *
 * On SQLite there is one server on one file. On PostgreSQL there may be several on one schema:
 * producers, consumers and pollers are spread over them (a retry after an unknown outcome goes
 * to the next server, a consumer whose server is down connects to another and acks its old
 * leases there), and one server at a time is disrupted while the others serve.
 *
 * Producers send single jobs and small batches, half of them with a dedup key; a connection
 * error or timeout is an unknown outcome, and the same jobs are sent again until a definite
 * answer (a keyed job then deduplicates; an unkeyed one may be stored twice, which is allowed).
 * Consumers — over a WebSocket, and a few over HTTP long-polls — take jobs with short leases
 * and, per delivery, ack after a short random work time, nack, never answer, work past their
 * lease, send a forged token first, or (WebSocket) drop their socket.
 *
 * @module
 */

import { OUTCOME_UNKNOWN } from "../../lib/core/errors.ts";
import { finalRead, Fleet } from "./fleet.ts";
import { check, type CheckOptions, type CheckReport } from "./checker.ts";
import { type Event, History, payloadFor, payloadIntact, type SentJob } from "./history.ts";
import type { Fault } from "./faulty_store.ts";

/** The server of the positive controls: `tegami serve` over a store broken on purpose. */
const FAULTY_SERVER = new URL("./faulty_server.ts", import.meta.url).pathname;

/**
 * How a server is disrupted: SIGKILL and restart, SIGTERM (a graceful stop under load) and
 * restart, SIGSTOP and SIGCONT, a random mix (70% kill, 15% each of the others), or (`store`)
 * the database server restarted under the servers by {@linkcode CampaignOptions.restartStore}.
 */
export type Disruption = "kill" | "term" | "pause" | "mixed" | "store";

/** Every disruption there is. */
export const DISRUPTIONS: readonly Disruption[] = ["kill", "term", "pause", "mixed", "store"];

/** Options of {@linkcode runCampaign}. */
export interface CampaignOptions {
  /** How many times the server is disrupted. */
  cycles: number;
  /** How the server is disrupted. @default "kill" */
  disruption?: Disruption;
  /** How long the server runs under load before each disruption, ms (uniform). @default [250, 1000] */
  upMs?: [number, number];
  /** How long a SIGSTOP lasts, ms. @default [200, 1500] */
  pauseMs?: [number, number];
  /** HTTP producers. @default 4 */
  producers?: number;
  /** WebSocket consumers. @default 4 */
  consumers?: number;
  /** HTTP consumers: long-poll leases, HTTP acks and nacks. @default 1 */
  pollers?: number;
  /** Subscription lease length per consumer, ms (uniform). @default [300, 1000] */
  leaseMs?: [number, number];
  /** A fault the server commits on purpose (a positive control: `faulty_server.ts`), or null. @default null */
  fault?: Fault | null;
  /** More `serve` flags. @default [] */
  serverArgs?: string[];
  /** How the history is checked (`deletedAtAck` for a server run with `--retain-done 0`). */
  check?: CheckOptions;
  /** Seed of the random choices (timings still vary). @default Date.now() */
  seed?: number;
  /** The database: a SQLite file (a temp dir is made and removed when absent) or a `postgres://` URL. */
  db?: string;
  /** The PostgreSQL schema (`--pg-schema`). @default "tegami" */
  schema?: string;
  /** Servers on the database, disrupted one at a time (more than one needs PostgreSQL). @default 1 */
  instances?: number;
  /** Restarts the database server as after a crash: the `store` disruption. */
  restartStore?: () => Promise<void>;
  /** The queue the campaign uses. @default "torture" */
  queue?: string;
  /** How long the final drain may take, ms. @default 60_000 */
  drainTimeoutMs?: number;
  /** Stops the disruptions early (the drain and check still run). */
  signal?: AbortSignal;
  /** Progress lines. @default none */
  log?: (line: string) => void;
}

/** What a campaign did and found. */
export interface CampaignResult {
  /** Every event. */
  history: Event[];
  /** The checker's verdict. */
  report: CheckReport;
  /** Disruptions carried out. */
  cycles: number;
  /** Wall time, ms. */
  wallMs: number;
  /** Whether the final SIGTERM stopped every server with exit code 0. */
  cleanExit: boolean;
  /** Each server's stderr of its last run. */
  lastStderr: string;
}

/**
 * Whether an error answer says its write's outcome is unknown: on PostgreSQL a connection lost
 * during COMMIT is answered `unavailable` with {@linkcode OUTCOME_UNKNOWN} in its message, and the
 * write may have been made. The history records it as unknown.
 */
export function outcomeUnknown(message: unknown): boolean {
  return typeof message === "string" && message.includes(OUTCOME_UNKNOWN);
}

/** A small seeded PRNG (mulberry32). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** How a settle ended: answered ok, answered an error, no answer, or not sent at all. */
type Settled = "ok" | "fail" | "info" | "none";

/** Sends an ack or nack for a consumer and answers how it ended. */
type Settle = (
  kind: "ack" | "nack",
  id: number,
  token: string,
  forged: boolean,
) => Promise<Settled>;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** How long one HTTP request may take before its outcome counts as unknown, ms. */
const REQUEST_TIMEOUT_MS = 5000;

/** Runs a campaign; see the module doc. */
export async function runCampaign(options: CampaignOptions): Promise<CampaignResult> {
  const started = Date.now();
  const random = seededRandom(options.seed ?? started);
  const between = ([low, high]: [number, number]) => low + random() * (high - low);
  const log = options.log ?? (() => {});
  const queue = options.queue ?? "torture";
  const ownDir = options.db === undefined
    ? await Deno.makeTempDir({ prefix: "tegami-torture-" })
    : null;
  const db = options.db ?? `${ownDir}/tegami.db`;
  const history = new History();
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
    onStart: (server, epoch) => history.add({ type: "server_start", epoch, server }),
    onDied: (server, epoch, code) => history.add({ type: "server_died", epoch, code, server }),
  });
  const urlOf = (i: number) => fleet.urlOf(i);
  const serverOf = (url: string) => fleet.serverOf(url);

  // ---- producers ----
  let producing = true;
  const enqueue = async (p: number, jobs: SentJob[], batch: boolean) => {
    const toJob = (job: SentJob) => ({
      payload: payloadFor(job.uid),
      ...(job.keyed ? { key: job.uid } : {}),
      max_attempts: 1000,
    });
    const body = JSON.stringify(batch ? { jobs: jobs.map(toJob) } : toJob(jobs[0]));
    for (let attempt = 0;; attempt++) {
      const op = history.nextOp();
      history.add({ type: "enqueue", op, jobs, batch });
      try {
        // Each retry goes to the next server: a key then deduplicates across servers.
        const response = await fetch(`${urlOf(p + attempt)}/v1/queues/${queue}/jobs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const text = await response.text();
        if (response.ok) {
          const answer = JSON.parse(text);
          const results = (batch ? answer.jobs : [answer]) as {
            id: number;
            deduplicated: boolean;
          }[];
          history.add({
            type: "enqueue_ok",
            op,
            results: results.map(({ id, deduplicated }) => ({ id, deduplicated })),
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
        if (outcomeUnknown(message)) {
          history.add({ type: "enqueue_info", op, error: message.slice(0, 120) });
        } else history.add({ type: "enqueue_fail", op, status: response.status, code });
        if (response.status !== 503) return; // a definite refusal; the checker reports it
      } catch (error) {
        history.add({ type: "enqueue_info", op, error: String(error).slice(0, 120) });
      }
      // Once the load stops, an enqueue that still has no answer after a while is left
      // unknown (a server that is gone for good must not hang the drain).
      if (!producing && attempt >= 200) return;
      await sleep(20 + random() * 80);
    }
  };
  const producer = async (p: number) => {
    let n = 0;
    while (producing) {
      const size = random() < 0.2 ? 2 + Math.floor(random() * 4) : 1;
      const jobs = Array.from({ length: size }, () => ({
        uid: `${queue}/p${p}/${n++}`,
        keyed: random() < 0.5,
      }));
      await enqueue(p, jobs, size > 1 || random() < 0.1);
      await sleep(2 + random() * 18);
    }
  };

  // ---- consumers ----
  let draining = false;
  let consuming = true;
  let connSeq = 0;
  /** Handlers still working, across every consumer. */
  let working = 0;

  /**
   * Plays out one delivery: never answer (4%), nack (8%), work past the lease (5%), else ack
   * after 0–30 ms; 3% send a forged token first; half the acks without an answer are sent
   * again. While draining: ack at once.
   */
  const handle = async (
    id: number,
    token: string,
    leaseMs: number,
    settle: Settle,
  ) => {
    working++;
    try {
      const r = random();
      if (!draining && r < 0.04) return; // never answered: the lease runs out
      const nack = !draining && r < 0.12;
      const slow = !draining && r >= 0.12 && r < 0.17;
      await sleep(
        draining ? random() * 5 : slow ? leaseMs * (0.9 + random() * 0.7) : random() * 30,
      );
      if (!draining && random() < 0.03) {
        await settle("ack", id, crypto.randomUUID().replaceAll("-", ""), true);
      }
      const outcome = await settle(nack ? "nack" : "ack", id, token, false);
      // An ack without an answer is sent again with the same token, as the client library
      // does after a reconnect: if the first was committed, the server answers the same ok.
      if (outcome === "info" && !nack && random() < 0.5) await settle("ack", id, token, false);
    } finally {
      working--;
    }
  };

  /**
   * Records a job frame or a leased job (the same shape over HTTP and WebSocket); `leaseMs` is
   * the lease length its consumer asked for.
   */
  const delivered = (
    conn: number,
    server: number,
    leaseMs: number,
    job: Record<string, unknown>,
  ) => {
    const lease = job.lease as { token: string; expires_at: number };
    const payload = job.payload as { uid?: unknown };
    history.add({
      type: "deliver",
      conn,
      server,
      id: job.id as number,
      uid: typeof payload?.uid === "string" ? payload.uid : "?",
      token: lease.token,
      attempt: job.attempt as number,
      expires_at: lease.expires_at,
      lease_ms: leaseMs,
      payload_ok: payloadIntact(payload),
    });
    return lease;
  };

  /** An HTTP consumer: long-polls for jobs and settles them over HTTP. */
  const poller = async (index: number) => {
    const conn = -(index + 1); // a pseudo-connection: HTTP has no socket whose loss frees leases
    const leaseMs = Math.round(between(options.leaseMs ?? [300, 1000]));
    let calls = 0;
    // Lease and settle through each server in turn: on PostgreSQL a lease is the database's.
    const post = (path: string, body: unknown, url = urlOf(index + calls++)) =>
      fetch(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    const settle: Settle = async (kind, id, token, forged) => {
      const op = history.nextOp();
      history.add({ type: "settle", op, conn, kind, id, token, forged });
      const body: Record<string, unknown> = { token };
      if (kind === "nack") {
        body.delay_ms = Math.floor(random() * 100);
        body.error = "torture nack";
      }
      try {
        const response = await post(`/v1/jobs/${id}/${kind}`, body);
        const answer = await response.json();
        if (response.ok) {
          history.add({ type: "settle_ok", op, state: String(answer.state) });
          return "ok";
        }
        if (outcomeUnknown(answer?.error?.message)) {
          history.add({ type: "settle_info", op, error: String(answer.error.message) });
          return "info";
        }
        history.add({ type: "settle_fail", op, code: String(answer?.error?.code) });
        return "fail";
      } catch (error) {
        history.add({ type: "settle_info", op, error: String(error).slice(0, 120) });
        return "info";
      }
    };
    let mine = 0;
    while (consuming) {
      if (mine >= 10) {
        await sleep(10);
        continue;
      }
      let jobs: Record<string, unknown>[] = [];
      const url = urlOf(index + calls++);
      const server = serverOf(url);
      try {
        const response = await post(`/v1/queues/${queue}/leases`, {
          max: 1 + Math.floor(random() * 5),
          wait_ms: 300,
          lease_ms: leaseMs,
        }, url);
        const answer = await response.json();
        if (response.ok) jobs = answer.jobs;
      } catch {
        // A lost answer may have leased jobs no one saw: they come back when the lease ends.
        await sleep(50 + random() * 100);
        continue;
      }
      for (const job of jobs) {
        const lease = delivered(conn, server, leaseMs, job);
        mine++;
        handle(job.id as number, lease.token, leaseMs, settle).finally(() => mine--);
      }
    }
  };
  const consumers: ConsumerActor[] = [];
  class ConsumerActor {
    readonly index: number;
    readonly leaseMs: number;
    readonly prefetch: number;
    socket: WebSocket | null = null;
    conn = 0;
    /** Sessions begun: each goes to the next server. */
    sessions = 0;
    /** Set by stop(): the last close is ours, not a loss. */
    stopping = false;
    readonly #waiting = new Map<number, (outcome: Settled) => void>();
    #loop: Promise<void> | null = null;

    constructor(index: number) {
      this.index = index;
      this.leaseMs = Math.round(between(options.leaseMs ?? [300, 1000]));
      this.prefetch = 1 + Math.floor(random() * 10);
    }

    /** Settles still waiting for an answer. */
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
      this.stopping = true;
      this.socket?.close();
      await this.#loop;
    }

    /** One socket's life: resolves when it closes (or fails to open). */
    #session(): Promise<void> {
      return new Promise((resolve) => {
        let socket: WebSocket;
        const url = urlOf(this.index + this.sessions++);
        const server = serverOf(url);
        try {
          socket = new WebSocket(url.replace(/^http/, "ws") + "/v1/ws");
        } catch {
          resolve();
          return;
        }
        let conn = 0;
        let dropped = false;
        const openTimer = setTimeout(() => socket.close(), REQUEST_TIMEOUT_MS);
        socket.onopen = () => {
          clearTimeout(openTimer);
          conn = ++connSeq;
          this.conn = conn;
          this.socket = socket;
          history.add({ type: "connect", conn, consumer: this.index, server });
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
          this.#onFrame(frame, conn, server, () => {
            if (dropped) return; // two frames of one burst may both choose to drop
            dropped = true;
            history.add({ type: "disconnect", conn, cause: "dropped" });
            socket.close();
          });
        };
        socket.onerror = () => {};
        socket.onclose = () => {
          clearTimeout(openTimer);
          if (conn !== 0) {
            if (!dropped) {
              history.add({ type: "disconnect", conn, cause: this.stopping ? "dropped" : "lost" });
            }
            this.socket = null;
            for (const [op, answer] of this.#waiting) {
              this.#waiting.delete(op);
              history.add({ type: "settle_info", op, error: "socket closed" });
              answer("info");
            }
          }
          resolve();
        };
      });
    }

    #onFrame(
      frame: Record<string, unknown>,
      conn: number,
      server: number,
      drop: () => void,
    ): void {
      switch (frame.op) {
        case "job": {
          const lease = delivered(conn, server, this.leaseMs, frame);
          handle(frame.id as number, lease.token, this.leaseMs, (...args) => this.#settle(...args));
          if (!draining && random() < 0.01) drop();
          return;
        }
        case "expired":
          history.add({ type: "expired", conn, id: frame.id as number });
          return;
        case "ok":
        case "error": {
          if (typeof frame.ref !== "number") {
            if (frame.op === "error") log(`consumer ${this.index}: ${JSON.stringify(frame)}`);
            return;
          }
          const answer = this.#waiting.get(frame.ref);
          if (answer === undefined) return;
          this.#waiting.delete(frame.ref);
          if (frame.op === "ok") {
            history.add({ type: "settle_ok", op: frame.ref, state: String(frame.state) });
            answer("ok");
          } else if (outcomeUnknown(frame.message)) {
            history.add({ type: "settle_info", op: frame.ref, error: String(frame.message) });
            answer("info");
          } else {
            history.add({ type: "settle_fail", op: frame.ref, code: String(frame.code) });
            answer("fail");
          }
        }
      }
    }

    async #settle(
      kind: "ack" | "nack",
      id: number,
      token: string,
      forged: boolean,
    ): Promise<Settled> {
      // Wait for a socket (after a restart, the ack goes on the new one: leases survive).
      while (this.socket === null || this.socket.readyState !== WebSocket.OPEN) {
        if (!consuming) return "none";
        await sleep(25);
      }
      const socket = this.socket;
      const op = history.nextOp();
      const frame: Record<string, unknown> = { op: kind, ref: op, id, token };
      if (kind === "nack") {
        frame.delay_ms = Math.floor(random() * 100);
        frame.error = "torture nack";
      }
      history.add({ type: "settle", op, conn: this.conn, kind, id, token, forged });
      const answered = new Promise<Settled>((resolve) => this.#waiting.set(op, resolve));
      socket.send(JSON.stringify(frame));
      // An answer that never comes on an open socket is an unknown outcome too.
      const timer = setTimeout(() => {
        const answer = this.#waiting.get(op);
        if (answer === undefined) return;
        this.#waiting.delete(op);
        history.add({ type: "settle_info", op, error: "no answer in time" });
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
  try {
    for (let i = 0; i < instances; i++) await fleet.start(i);
    for (let i = 0; i < (options.consumers ?? 4); i++) {
      const consumer = new ConsumerActor(i);
      consumers.push(consumer);
      consumer.run();
    }
    const pollers = Array.from({ length: options.pollers ?? 1 }, (_, i) => poller(i));
    const producers = Array.from({ length: options.producers ?? 4 }, (_, p) => producer(p));
    const disruption = options.disruption ?? "kill";
    if (disruption === "store" && options.restartStore === undefined) {
      throw new Error("the store disruption needs restartStore");
    }
    while (cycles < options.cycles && !options.signal?.aborted) {
      await sleep(between(options.upMs ?? [250, 1000]));
      const i = Math.floor(random() * instances); // one server at a time
      const running = fleet.servers[i].process;
      if (running === null) continue; // it died by itself and is starting again
      const epoch = fleet.epoch;
      const r = random();
      const what = disruption !== "mixed"
        ? disruption
        : r < 0.7
        ? "kill"
        : r < 0.85
        ? "term"
        : "pause";
      if (what === "kill") {
        history.add({ type: "server_kill", epoch, server: i });
        fleet.take(i);
        running.kill("SIGKILL");
        await running.exited();
        await fleet.start(i);
      } else if (what === "term") {
        history.add({ type: "server_stop", epoch, server: i });
        fleet.take(i);
        running.kill("SIGTERM");
        const { code } = await running.exited();
        history.add({ type: "server_exit", epoch, code, server: i });
        await fleet.start(i);
      } else if (what === "pause") {
        history.add({ type: "server_pause", epoch, server: i });
        running.kill("SIGSTOP");
        await sleep(between(options.pauseMs ?? [200, 1500]));
        running.kill("SIGCONT");
        history.add({ type: "server_resume", epoch, server: i });
      } else {
        history.add({ type: "store_restart" });
        await options.restartStore!();
      }
      cycles++;
      if (cycles % 10 === 0) log(`${cycles} ${disruption} cycles, ${history.events.length} events`);
    }

    // ---- drain ----
    draining = true;
    producing = false;
    await Promise.all(producers);
    const deadline = Date.now() + (options.drainTimeoutMs ?? 60_000);
    let quiet = 0;
    while (quiet < 3 && Date.now() < deadline) {
      await sleep(100);
      try {
        const response = await fetch(`${urlOf(0)}/v1/queues/${queue}`);
        const stats = await response.json();
        const c = stats.counts;
        const busy = working + consumers.reduce((n, consumer) => n + consumer.busy, 0);
        quiet = c.pending + c.delayed + c.leased === 0 && busy === 0 ? quiet + 1 : 0;
      } catch {
        quiet = 0;
      }
    }
    if (quiet < 3) log("drain timed out");
    consuming = false;
    await Promise.all([...consumers.map((consumer) => consumer.stop()), ...pollers]);
    ({ clean: cleanExit, stderr: lastStderr } = await fleet.stopAll());

    // ---- the database, read after the servers stopped ----
    const { integrity, jobs } = await finalRead(db, options.schema, queue);
    history.add({ type: "final", integrity, jobs });
  } finally {
    producing = false;
    consuming = false;
    for (const consumer of consumers) consumer.socket?.close();
    await fleet.dispose();
    if (ownDir !== null) await Deno.remove(ownDir, { recursive: true });
  }
  const report = check(history.events, options.check);
  return {
    history: history.events,
    report,
    cycles,
    wallMs: Date.now() - started,
    cleanExit,
    lastStderr,
  };
}
