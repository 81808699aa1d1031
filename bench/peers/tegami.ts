/**
 * tegami as users run it: `main.ts serve` in its own process (default `--sync full`) on a fresh
 * temp database, driven over HTTP (producers, batch fill) and WebSocket (consumers, and the
 * W3b producers that send `enqueue` frames).
 *
 * @module
 */

import { type ServerProcess, spawnServer } from "../../tests/helpers/process_server.ts";
import { wsUrl } from "../../tests/helpers/ws_client.ts";
import { type CommitBatches, parseCommitBatches } from "../commit_batches.ts";
import type { Stamp } from "../payload.ts";
import { consume, TegamiClient } from "../../lib/client/mod.ts";
import { AckTracker } from "./ack_tracker.ts";
import { dropSchema, freshSchema } from "./pg_schema.ts";
import { Http1Client } from "./http1_client.ts";
import type { Consumer, Peer, Producer, Target } from "./peer.ts";

/** Options of {@linkcode tegamiPeer}. */
export interface TegamiOptions {
  /** `--sync` of the server. @default "full" */
  sync?: "full" | "normal";
  /** HTTP client of the producers: the bench's lean HTTP/1.1 client, or `fetch`. @default "lean" */
  http?: "lean" | "fetch";
  /**
   * Run the runtime floor (`bench/floor_server.ts`: the same protocol, no storage) instead of
   * tegami, as a bound for what any server on this runtime can do.
   */
  floor?: boolean;
  /** More flags for `tegami serve`. */
  serveArgs?: string[];
  /** Write a V8 CPU profile of the server into this directory when it stops. */
  cpuProfileDir?: string;
  /** V8 flags for the server process (`deno run --v8-flags=…`), e.g. `--max-semi-space-size=1`. */
  v8Flags?: string;
  /**
   * How producers and consumers talk to it: the raw protocol the bench writes by hand (one
   * request or frame per job), or the client library users run (`lib/client`: `TegamiClient`
   * and `consume`, which coalesce each tick's calls and speak protocol v2). @default "raw"
   */
  client?: "raw" | "sdk";
  /**
   * Run on PostgreSQL instead of SQLite: `instances` servers on a fresh schema of `url`, dropped
   * after; producers and fills go to the first, consumers to the last, so with 2 every job crosses
   * from one instance to the other.
   */
  pg?: { url: string; instances: number };
}

/** The name in the table of tegami on PostgreSQL with `instances` servers. */
export function pgName(instances: number): string {
  return instances === 1
    ? "tegami on PostgreSQL"
    : `tegami on PostgreSQL × ${instances} (enqueue on one, push from another)`;
}

/** POSTs JSON text to a fixed URL; fails on any status but 2xx. */
type Poster = { post(body: string): Promise<void>; close(): void };

function poster(url: string, http: "lean" | "fetch"): Poster {
  if (http === "fetch") {
    const client = Deno.createHttpClient({});
    return {
      post: async (body) => {
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
          client,
        });
        const text = await response.text();
        if (!response.ok) throw new Error(`Cannot POST ${url}: ${response.status} ${text}`);
      },
      close: () => client.close(),
    };
  }
  const client = new Http1Client(url);
  const path = new URL(url).pathname;
  return {
    post: async (body) => {
      const { status, body: text } = await client.post(path, body);
      if (status < 200 || status > 299) throw new Error(`Cannot POST ${url}: ${status} ${text}`);
    },
    close: () => client.close(),
  };
}

/** Sends a batch of payloads in one request or frame. */
export interface BatchProducer {
  /** Enqueues every payload (JSON texts) all-or-nothing. */
  send(payloads: readonly string[]): Promise<void>;
  /** Closes its connections. */
  close(): Promise<void>;
}

/** What a restart cost. */
export interface Restart {
  /** From SIGTERM to exit, in ms. */
  shutdownMs: number;
  /** From spawning the process to its "listening" log line, in ms. */
  startupMs: number;
}

/** The name in the table of tegami driven through its client library. */
export const SDK_NAME = "tegami via SDK (lib/client)";

/** The runtime floor's module and its name in the table. */
const FLOOR_SCRIPT = new URL("../floor_server.ts", import.meta.url).pathname;
export const FLOOR_NAME = "runtime floor (Deno HTTP+WS, no storage)";
/** The runtime floor driven through the client library, as "tegami via SDK" is. */
export const FLOOR_SDK_NAME = "runtime floor via SDK (no storage)";

const FILL_BATCH = 1000;
const FILL_IN_FLIGHT = 4;

/** A running tegami server. */
export class TegamiTarget implements Target {
  readonly singleThreaded = true;
  /** `tegami`, or the floor's name. */
  readonly name: string;
  readonly #floor: boolean;
  #server: ServerProcess;
  /** The other instances on PostgreSQL; the last one serves the consumers. */
  readonly #others: ServerProcess[];
  readonly #schema: string | null;
  readonly #dir: string;
  readonly #args: string[];
  readonly #http: "lean" | "fetch";
  readonly #runtimeFlags: string[];
  readonly #sdk: boolean;
  /** How long the first start took, from spawn to listening, in ms. */
  readonly startupMs: number;

  private constructor(
    server: ServerProcess,
    dir: string,
    args: string[],
    startupMs: number,
    http: "lean" | "fetch",
    runtimeFlags: string[],
    floor: boolean,
    sdk: boolean,
    pg: { others: ServerProcess[]; schema: string; instances: number } | null,
  ) {
    this.#others = pg?.others ?? [];
    this.#schema = pg?.schema ?? null;
    this.#runtimeFlags = runtimeFlags;
    this.#floor = floor;
    this.#sdk = sdk;
    this.name = floor
      ? (sdk ? FLOOR_SDK_NAME : FLOOR_NAME)
      : sdk
      ? SDK_NAME
      : pg !== null
      ? pgName(pg.instances)
      : "tegami";
    this.#server = server;
    this.#http = http;
    this.#dir = dir;
    this.#args = args;
    this.startupMs = startupMs;
  }

  /** Starts a server on a fresh database in a new temp directory. */
  static async start(options: TegamiOptions = {}): Promise<TegamiTarget> {
    const dir = await Deno.makeTempDir({ prefix: "tegami-bench-" });
    const schema = options.pg === undefined ? null : freshSchema("tegami");
    const args = options.pg === undefined
      ? ["--db", `${dir}/bench.db`, "--sync", options.sync ?? "full", ...options.serveArgs ?? []]
      : ["--db", options.pg.url, "--pg-schema", schema!, ...options.serveArgs ?? []];
    const startedAt = performance.now();
    try {
      const runtimeFlags = options.cpuProfileDir === undefined
        ? []
        : ["--cpu-prof", `--cpu-prof-dir=${options.cpuProfileDir}`];
      if (options.v8Flags !== undefined) runtimeFlags.push(`--v8-flags=${options.v8Flags}`);
      const script = options.floor ? FLOOR_SCRIPT : undefined;
      const server = await spawnServer(args, { runtimeFlags, script });
      // One after the other: the first creates the schema.
      const others: ServerProcess[] = [];
      for (let i = 1; i < (options.pg?.instances ?? 1); i++) {
        others.push(await spawnServer(args, { runtimeFlags }));
      }
      return new TegamiTarget(
        server,
        dir,
        args,
        performance.now() - startedAt,
        options.http ?? "lean",
        runtimeFlags,
        options.floor ?? false,
        options.client === "sdk",
        schema === null ? null : { others, schema, instances: options.pg!.instances },
      );
    } catch (error) {
      await Deno.remove(dir, { recursive: true });
      if (schema !== null) await dropSchema(schema).catch(() => {});
      throw error;
    }
  }

  /** The SQLite database file, or null on PostgreSQL. */
  get databasePath(): string | null {
    return this.#schema === null ? `${this.#dir}/bench.db` : null;
  }

  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  get url(): string {
    return this.#server.url;
  }

  /** The server processes (PostgreSQL's own are not counted). */
  get pids(): readonly number[] {
    return [this.#server.child.pid, ...this.#others.map((o) => o.child.pid)];
  }

  /** What the Node driver needs to reach this server (bench/peers/node_target.ts). */
  nodeSpec(queue: string): Promise<{ spec: Record<string, unknown>; queue: string }> {
    return Promise.resolve({ spec: { tegami: { url: this.url } }, queue });
  }

  /** Where consumers connect: the last instance (with 2 on PostgreSQL, not the producers'). */
  get consumerUrl(): string {
    return this.#others.at(-1)?.url ?? this.url;
  }

  /**
   * An HTTP producer with its own connections: `POST /v1/queues/{queue}/jobs` per job; through
   * the SDK, a `TegamiClient` whose `enqueue` calls of one tick share a request.
   */
  producer(queue: string): Promise<Producer> {
    if (this.#sdk) {
      const client = new TegamiClient({ url: this.url });
      return Promise.resolve({
        send: async (payload) => {
          await client.enqueue(queue, JSON.parse(payload));
        },
        close: () => Promise.resolve(),
      });
    }
    const http = poster(`${this.url}/v1/queues/${queue}/jobs`, this.#http);
    return Promise.resolve({
      send: (payload) => http.post(`{"payload":${payload}}`),
      close: () => Promise.resolve(http.close()),
    });
  }

  /**
   * An HTTP producer like {@linkcode TegamiTarget.producer}'s whose jobs go round `groups`
   * ordering groups (`g0`, `g1`, …) in turn.
   */
  groupedProducer(queue: string, groups: number): Promise<Producer> {
    const http = poster(`${this.url}/v1/queues/${queue}/jobs`, this.#http);
    let next = 0;
    return Promise.resolve({
      send: (payload) => http.post(`{"payload":${payload},"group":"g${next++ % groups}"}`),
      close: () => Promise.resolve(http.close()),
    });
  }

  /** Replaces a queue's settings (`PUT /v1/queues/{queue}/settings`). */
  async putSettings(queue: string, settings: Record<string, unknown>): Promise<void> {
    const response = await fetch(`${this.url}/v1/queues/${queue}/settings`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(settings),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`Cannot set the settings of "${queue}": ${text}`);
  }

  /** An HTTP producer sending all of a batch in one request (`{"jobs":[…]}`). */
  batchProducer(queue: string, priority = 0, delayMs = 0): BatchProducer {
    const http = poster(`${this.url}/v1/queues/${queue}/jobs`, this.#http);
    const extra = (priority === 0 ? "" : `,"priority":${priority}`) +
      (delayMs === 0 ? "" : `,"delay_ms":${delayMs}`);
    return {
      send: (payloads) =>
        http.post(`{"jobs":[${payloads.map((p) => `{"payload":${p}${extra}}`).join(",")}]}`),
      close: () => Promise.resolve(http.close()),
    };
  }

  /** A WebSocket producer: `enqueue` frames pipelined with refs, one socket per producer. */
  async wsProducer(queue: string): Promise<Producer> {
    const ws = await openSocket(this.url);
    const pending = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
    let ref = 0;
    ws.onmessage = (event) => {
      const frame = JSON.parse(event.data);
      const waiter = pending.get(frame.ref);
      if (waiter === undefined) return;
      pending.delete(frame.ref);
      if (frame.op === "ok") waiter.resolve();
      else {waiter.reject(
          new Error(`Cannot enqueue over WebSocket: ${frame.code} ${frame.message}`),
        );}
    };
    const prefix = `,"queue":${JSON.stringify(queue)},"payload":`;
    return {
      send: (payload) =>
        new Promise<void>((resolve, reject) => {
          const r = ++ref;
          pending.set(r, { resolve, reject });
          ws.send(`{"op":"enqueue","ref":${r}${prefix}${payload}}`);
        }),
      close: () => closeSocket(ws),
    };
  }

  /**
   * A WebSocket consumer: `subscribe` with `prefetch`, an `ack` frame per job as it arrives;
   * through the SDK, `consume` with `prefetch` handlers at once, each acking on return.
   */
  async consumer(queue: string, prefetch: number, onJob: (job: Stamp) => void): Promise<Consumer> {
    if (this.#sdk) {
      const worker = consume<Stamp>(queue, (payload) => {
        onJob(payload);
      }, { url: this.consumerUrl, prefetch, concurrency: prefetch });
      await worker.ready();
      return {
        // A handler counts as running until its ack is answered.
        acked: async () => {
          while (worker.running > 0) await new Promise((resolve) => setTimeout(resolve, 1));
        },
        close: () => worker.close(),
      };
    }
    const ws = await openSocket(this.consumerUrl);
    const acks = new AckTracker();
    let errors = 0;
    let ref = 0;
    const { promise: subscribed, resolve, reject } = Promise.withResolvers<void>();
    ws.onmessage = (event) => {
      const frame = JSON.parse(event.data);
      switch (frame.op) {
        case "job":
          onJob(frame.payload);
          acks.sent();
          ws.send(`{"op":"ack","ref":${++ref},"id":${frame.id},"token":"${frame.lease.token}"}`);
          return;
        case "ok":
          if (frame.ref === "subscribe") resolve();
          else acks.answered();
          return;
        case "error":
          if (frame.ref === "subscribe") {
            reject(new Error(`Cannot subscribe to "${queue}": ${frame.message}`));
            return;
          }
          acks.answered();
          if (errors++ < 3) console.error(`tegami consumer: ${frame.code}: ${frame.message}`);
      }
    };
    ws.send(JSON.stringify({ op: "subscribe", ref: "subscribe", queue, prefetch }));
    await subscribed;
    return { acked: () => acks.settled(), close: () => closeSocket(ws) };
  }

  /**
   * Enqueues `count` copies of `payload` in batches of 1000, 4 requests in flight, at `priority`
   * and due in `delayMs`.
   */
  async fill(
    queue: string,
    count: number,
    payload: string,
    priority = 0,
    delayMs = 0,
  ): Promise<void> {
    const producer = this.batchProducer(queue, priority, delayMs);
    const full = Array.from({ length: FILL_BATCH }, () => payload);
    let left = count;
    try {
      await Promise.all(Array.from({ length: FILL_IN_FLIGHT }, async () => {
        while (left > 0) {
          const n = Math.min(FILL_BATCH, left);
          left -= n;
          await producer.send(n === FILL_BATCH ? full : full.slice(0, n));
        }
      }));
    } finally {
      await producer.close();
    }
  }

  /** The group-commit histogram from `/metrics`; null for the floor, which commits nothing. */
  async commitBatches(): Promise<CommitBatches | null> {
    if (this.#floor) return null;
    const response = await fetch(`${this.url}/metrics`);
    return parseCommitBatches(await response.text());
  }

  /**
   * The consumers' server's group-commit histogram, with several servers on PostgreSQL (its
   * claims and acks; {@linkcode TegamiTarget.commitBatches} has the producers'); null with one.
   */
  async consumerCommitBatches(): Promise<CommitBatches | null> {
    if (this.#others.length === 0) return null;
    const response = await fetch(`${this.consumerUrl}/metrics`);
    return parseCommitBatches(await response.text());
  }

  /** Stops the server (SIGTERM) and starts it again on the same database; answers the times. */
  async restart(): Promise<Restart> {
    const stopAt = performance.now();
    this.#server.kill("SIGTERM");
    const { code, stderr } = await this.#server.exited();
    if (code !== 0) throw new Error(`Server exited with ${code} on SIGTERM:\n${stderr}`);
    const shutdownMs = performance.now() - stopAt;
    const startAt = performance.now();
    this.#server = await spawnServer(this.#args, {
      runtimeFlags: this.#runtimeFlags,
      script: this.#floor ? FLOOR_SCRIPT : undefined,
    });
    return { shutdownMs, startupMs: performance.now() - startAt };
  }

  /** Stops the servers and removes their database (or schema). */
  async stop(): Promise<void> {
    try {
      await Promise.all([this.#server, ...this.#others].map(async (server) => {
        server.kill("SIGTERM");
        const { code, stderr } = await server.exited();
        if (code !== 0) console.error(`tegami exited with ${code}:\n${stderr.slice(-2000)}`);
      }));
    } finally {
      await Deno.remove(this.#dir, { recursive: true });
      if (this.#schema !== null) await dropSchema(this.#schema);
    }
  }
}

/** Opens a WebSocket to the server and waits until it is open. */
export async function openSocket(url: string): Promise<WebSocket> {
  const ws = new WebSocket(wsUrl(url));
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error(`Cannot open a WebSocket to ${url}`));
  });
  ws.onerror = null;
  return ws;
}

async function closeSocket(ws: WebSocket): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return;
  const closed = new Promise((resolve) => ws.addEventListener("close", resolve));
  ws.close();
  await closed;
}

/** A {@linkcode Peer} whose targets are tegami servers. */
export interface TegamiPeer extends Peer {
  /** Starts a fresh server on a new database. */
  start(): Promise<TegamiTarget>;
}

/** Starts fresh tegami servers. */
export function tegamiPeer(options: TegamiOptions = {}): TegamiPeer {
  return { key: "tegami", name: "tegami", start: () => TegamiTarget.start(options) };
}

/** Starts fresh tegami servers driven through the client library (see `TegamiOptions.client`). */
export function tegamiSdkPeer(options: TegamiOptions = {}): TegamiPeer {
  return {
    key: "sdk",
    name: SDK_NAME,
    start: () => TegamiTarget.start({ ...options, client: "sdk" }),
  };
}

/** Starts `instances` fresh tegami servers on a fresh schema of the PostgreSQL at `url`. */
export function tegamiPgPeer(
  url: string,
  instances: number,
  options: TegamiOptions = {},
): TegamiPeer {
  return {
    key: instances === 1 ? "pg" : `pg${instances}`,
    name: pgName(instances),
    start: () => TegamiTarget.start({ ...options, pg: { url, instances } }),
  };
}

/** Starts fresh runtime floors (see `bench/floor_server.ts`), driven by the same HTTP client. */
export function floorPeer(http: "lean" | "fetch" = "lean"): TegamiPeer {
  return {
    key: "floor",
    name: FLOOR_NAME,
    start: () => TegamiTarget.start({ floor: true, http }),
  };
}

/**
 * Starts fresh runtime floors driven through the client library: what the runtime alone costs
 * for the SDK's traffic (a request per tick of enqueues, `jobs` pushes, `batch` acks).
 */
export function floorSdkPeer(): TegamiPeer {
  return {
    key: "floorsdk",
    name: FLOOR_SDK_NAME,
    start: () => TegamiTarget.start({ floor: true, client: "sdk" }),
  };
}
