/**
 * Systems driven from Node: the same server as another peer (tegami, RabbitMQ, BullMQ), with its
 * producers and consumers in a Node process (`bench/node/driver.mjs`) using the client users run
 * on Node — tegami's client library bundled by `deno bundle`, amqplib, BullMQ — so that the
 * client's CPU per job is Node's. W1, W2 and W3 run there; the driver's CPU is that process's,
 * read from `/proc` between the lines it writes when its clock starts and stops.
 *
 * The Node process warms up on its own (a short W1 on a queue of its own) before measuring: a
 * fresh Node has compiled nothing yet, and the server warms up with it.
 *
 * @module
 */

import { cpuMeter, type CpuUse, totalRss } from "../proc.ts";
import type { Measurement } from "../measurement.ts";
import type { Stamp } from "../payload.ts";
import { WARM_UP_JOBS } from "../workloads/warm_up.ts";
import type { Consumer, Peer, Producer, Target } from "./peer.ts";
import { PeerUnavailable } from "./peer.ts";

/** What ends the name of every system driven from Node. */
export const ON_NODE = " on Node";

/** The clients the Node driver has. */
export type NodeClient = "tegami" | "rabbitmq" | "bullmq";

/** Where the Node driver finds the server: what a target driven from Node must tell it. */
export interface NodeReachable extends Target {
  /** The driver's settings for this server, and the real name of `queue` on it. */
  nodeSpec(queue: string): Promise<{ spec: Record<string, unknown>; queue: string }>;
}

/** The workloads the Node driver runs. */
export type NodeWorkload = "W1" | "W2" | "W3";

const DRIVER = new URL("../node/driver.mjs", import.meta.url).pathname;
const ROOT = new URL("../../", import.meta.url).pathname;

/** The client library bundled for Node, once per bench run. */
let bundled: Promise<string> | null = null;

function clientBundle(): Promise<string> {
  // Another build of the library (an older one, to compare) when the environment names one.
  const given = Deno.env.get("TEGAMI_BENCH_NODE_CLIENT");
  if (given !== undefined) return Promise.resolve(new URL(given, `file://${Deno.cwd()}/`).href);
  bundled ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "tegami-bench-node-" });
    const out = `${dir}/client.mjs`;
    const built = await new Deno.Command(Deno.execPath(), {
      args: ["bundle", "--platform", "browser", "--format", "esm", "-o", out, "lib/client/mod.ts"],
      cwd: ROOT,
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!built.success) {
      throw new Error(`Cannot bundle the client: ${new TextDecoder().decode(built.stderr)}`);
    }
    return `file://${out}`;
  })();
  return bundled;
}

/** A system's server, with its clients in a Node process. */
export class NodeTarget implements Target {
  readonly name: string;
  readonly #inner: NodeReachable;
  readonly #client: NodeClient;
  readonly #node: string;
  readonly #version: string;

  constructor(inner: NodeReachable, client: NodeClient, node: string, version: string) {
    this.#inner = inner;
    this.#client = client;
    this.#node = node;
    this.#version = version;
    this.name = `${inner.name}${ON_NODE}`;
  }

  /** The target whose server this is (the bench reads tegami's figures from it). */
  get inner(): Target {
    return this.#inner;
  }

  get pids(): readonly number[] {
    return this.#inner.pids;
  }

  get singleThreaded(): boolean {
    return this.#inner.singleThreaded;
  }

  // Set-up (W2's fill) and anything else but W1–W3 go through the bench's own clients.
  producer(queue: string): Promise<Producer> {
    return this.#inner.producer(queue);
  }

  consumer(queue: string, prefetch: number, onJob: (job: Stamp) => void): Promise<Consumer> {
    return this.#inner.consumer(queue, prefetch, onJob);
  }

  fill(queue: string, count: number, payload: string): Promise<void> {
    return this.#inner.fill(queue, count, payload);
  }

  stop(): Promise<void> {
    return this.#inner.stop();
  }

  /** Runs `workload` over `jobs` jobs of `queue` in a Node process; answers its measurement. */
  async run(workload: NodeWorkload, queue: string, jobs: number): Promise<Measurement> {
    const { spec, queue: name } = await this.#inner.nodeSpec(queue);
    const warm = await this.#inner.nodeSpec(`${queue}-warm-up`);
    // Node 20 has the standard WebSocket behind a flag: an older client library needs it.
    const flags = Number(this.#version.split(".")[0]) < 22 ? ["--experimental-websocket"] : [];
    const child = new Deno.Command(this.#node, {
      args: [
        ...flags,
        DRIVER,
        JSON.stringify({
          ...spec,
          system: this.#client,
          workload,
          queue: name,
          jobs,
          warmUp: WARM_UP_JOBS,
          warmUpQueue: warm.queue,
          waitForStdin: true,
          tegami: this.#client === "tegami"
            ? { ...spec.tegami as object, client: await clientBundle() }
            : undefined,
        }),
      ],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let meter: (() => CpuUse) | null = null;
    let cpu: CpuUse | undefined;
    let done: Record<string, unknown> | null = null;
    const stderr = new Response(child.stderr).text();
    let rest = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      rest += chunk;
      let end;
      while ((end = rest.indexOf("\n")) >= 0) {
        const line = JSON.parse(rest.slice(0, end));
        rest = rest.slice(end + 1);
        if (line.event === "start") meter = cpuMeter(this.pids, this.singleThreaded, child.pid);
        else if (line.event === "stop") cpu = meter?.();
        else if (line.event === "done") {
          done = line;
          // The driver waits for this before it exits, so /proc was read while it lived.
          await child.stdin.close();
        }
      }
    }
    const status = await child.status;
    if (!status.success || done === null) {
      const text = (await stderr).trim().split("\n").slice(-3).join(" ");
      throw new Error(`The Node driver failed (exit ${status.code}): ${text}`);
    }
    return {
      jobs: done.jobs as number,
      seconds: done.seconds as number,
      latency: (done.latency ?? undefined) as Measurement["latency"],
      cpu,
      rssBytes: totalRss(this.pids),
      notes: [`clients on Node ${this.#version}`],
    };
  }
}

/** The Node the bench runs its Node clients on: `node` on PATH unless `--node` names another. */
async function nodeVersion(node: string): Promise<string> {
  try {
    const out = await new Deno.Command(node, { args: ["--version"], stdout: "piped" }).output();
    if (out.success) return new TextDecoder().decode(out.stdout).trim().replace(/^v/, "");
  } catch {
    // not found: said below
  }
  throw new PeerUnavailable(`Node is not at "${node}" (install it, or pass --node PATH)`);
}

/**
 * The peer `inner` with its clients on Node `node`: named as `inner` is with " on Node", keyed
 * `key`.
 */
export function nodePeer(inner: Peer, client: NodeClient, key: string, node: string): Peer {
  return {
    key,
    name: `${inner.name}${ON_NODE}`,
    async start() {
      const version = await nodeVersion(node);
      const target = await inner.start() as NodeReachable;
      return new NodeTarget(target, client, node, version);
    },
  };
}
