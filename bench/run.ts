/**
 * `deno task bench`: starts tegami as users run it (`main.ts serve`, default `--sync full`, a temp
 * database) and the peers it is measured against, drives each from this process over loopback,
 * and prints one markdown table (`--json` for machines). Progress goes to stderr.
 *
 * Every system gets a fresh instance per workload (RabbitMQ, shared, a fresh quorum queue), so
 * no workload inherits another's backlog. Workloads, all with 100-byte JSON payloads:
 *
 * - W1 end to end: 4 producers × 32 sends in flight, 4 consumers with prefetch 32 acking at once
 * - W2 drain: a pre-filled backlog drained by 4 consumers (the RSS shown is with it waiting)
 * - W3 enqueue only, 4 × 32 in flight; W3b the same over tegami's WebSocket `enqueue` frames
 * - W4 batch enqueue, 100 jobs per request (tegami)
 * - W5 idle push latency: one consumer, one job at a time
 * - W1g: W1 with its jobs spread over 1 000 ordering groups (group_limit 1); compare with W1
 * - W1w: W1g with 100 of the groups at weight 5; compare with W1 and W1g. Then, on fresh
 *   servers, every group with a backlog of 100 jobs: the deliveries per group of weight 5
 *   against weight 1 while all wait, at group_limit 1 and 8
 * - W6: a queue with `rate` 500/s and a deep backlog; the deliveries of 10 s against the rate
 * - W7 batches of ten, as SQS clients run: send 10, receive up to 10 with a long poll, settle
 *   the 10 in one call; tegami's own API against its SQS API (`--peers sqs`)
 * - WF a flow: a root, 10 000 children and a fan-in node created in one request, run by 4
 *   consumers of the client library; the fan-out and fan-in latencies (tegami, and on
 *   PostgreSQL with `--peers pg`)
 * - idle RSS of each system; with `--scale`, W1 and W5 with 100 000 and 1 000 000 jobs waiting
 *
 * Absolute numbers on a shared machine are noisy: compare rows of the same run.
 *
 * @module
 */

import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { beanstalkdPeer } from "./peers/beanstalkd.ts";
import { bullmqPeer } from "./peers/bullmq.ts";
import type { Peer, Target } from "./peers/peer.ts";
import type { Measurement } from "./measurement.ts";
import { rabbitmqPeer } from "./peers/rabbitmq.ts";
import { nodePeer, NodeTarget, type NodeWorkload } from "./peers/node_target.ts";
import { pgBossPeer } from "./peers/pg_boss.ts";
import { pgFloorPeer } from "./peers/pg_floor.ts";
import { benchPgUrl } from "./peers/pg_schema.ts";
import {
  floorPeer,
  floorSdkPeer,
  tegamiPeer,
  tegamiPgPeer,
  tegamiSdkPeer,
  TegamiTarget,
} from "./peers/tegami.ts";
import { Runner, type Workload } from "./runner.ts";
import { cpuMeter, totalRss } from "./proc.ts";
import { jsonRows, markdownTable, type Row } from "./report.ts";
import { checkTargets, describeTargets } from "./targets.ts";
import { batchEnqueue } from "./workloads/batch_enqueue.ts";
import { drain, fillBacklog, type Filled } from "./workloads/drain.ts";
import { endToEnd } from "./workloads/end_to_end.ts";
import { enqueue } from "./workloads/enqueue.ts";
import { pushLatency } from "./workloads/push_latency.ts";
import { rateLimit } from "./workloads/rate_limit.ts";
import { scaling } from "./workloads/scaling.ts";
import { batchesOfTen } from "./workloads/batches_of_ten.ts";
import { flowFan } from "./workloads/flow_fan.ts";
import { putWeights, weightShares } from "./workloads/weighted_groups.ts";
import { nativeBatchDoor } from "./peers/native_batches.ts";
import { sqsPeer, SqsTarget } from "./peers/sqs.ts";

const WORKLOADS = [
  "RSS",
  "W1",
  "W1g",
  "W1w",
  "W2",
  "W3",
  "W3b",
  "W4",
  "W5",
  "W6",
  "W7",
  "WF",
  "scale",
] as const;
type WorkloadKey = typeof WORKLOADS[number];
const PEER_KEYS = [
  "sdk",
  "floor",
  "floorsdk",
  "rabbitmq",
  "beanstalkd",
  "bullmq",
  "pg",
  "pg2",
  "pgboss",
  "pgfloor",
  "sdknode",
  "rabbitmqnode",
  "bullmqnode",
  "sqs",
  "sqsraw",
] as const;
/** What `--peers node` selects: the systems driven from Node. */
const NODE_PEERS = ["sdknode", "rabbitmqnode", "bullmqnode"];
/** What `--pg` selects: the PostgreSQL rows. */
const PG_PEERS = ["pg", "pg2", "pgboss", "pgfloor"];
const ROOT = new URL("..", import.meta.url).pathname;

const HELP = `deno task bench [options]

Starts a tegami server (main.ts serve, --sync full, temp db) and the peers, drives them from this
process and prints one markdown table. Progress goes to stderr.

  --only LIST        parts to run, comma separated, of ${WORKLOADS.join(",")}
                     (default: all but scale; RSS is the idle RSS of each system)
  --jobs N           jobs of W1, W3, W3b and W7 (default 20000)
  --flow-children N  WF's children between its root and its fan-in node (default 10000)
  --backlog N        jobs of W2 (pre-filled, then drained) and W4 (default 50000)
  --samples N        W5 samples (default 2000)
  --repeat N         run each workload N times on each system, interleaved, and keep the
                     median run (default 1)
  --peers LIST       none, all, or some of ${PEER_KEYS.join(",")} (default all)
  --pg               the PostgreSQL rows only: --peers ${PG_PEERS.join(",")} (tegami on SQLite
                     stays, as the first row)
  --scale            also run the scale part: W1 and W5 with jobs waiting in another queue and
                     in the same queue, and startup with them on disk (takes minutes)
  --scale-sizes LIST backlog sizes for --scale (default 100000,1000000)
  --sync MODE        tegami's --sync: full or normal (default full)
  --serve-args=ARGS  more flags for tegami serve, space separated, after an = sign
                     (e.g. --serve-args="--lease 10s --retain-done 0")
  --fetch            tegami's HTTP producers use fetch instead of the bench's lean HTTP/1.1
                     client (same requests, more driver CPU)
  --cold             measure fresh instances without the warm-up (a 5000-job W1 on a queue of
                     its own, run on each instance before measuring)
  --v8-flags=FLAGS   V8 flags for each tegami server process, comma separated, after an = sign
                     (e.g. --v8-flags=--max-semi-space-size=1; see operations.md, Memory)
  --cpu-prof DIR     write a V8 CPU profile of each tegami server process into DIR when it
                     stops (summarise one with deno run -A bench/cpu_profile.ts FILE)
  --w7-rate N        send W7's jobs at N per second instead of as fast as each door takes them
                     (at one rate both doors' commits gather alike: their server CPU per job
                     then differs by what the doors cost)
  --wal-pages        note, for each tegami workload on SQLite, which tables and indexes the
                     pages its commits wrote belong to (bench/wal_pages.ts; read from the
                     write-ahead log after the workload, so the commits since its last
                     checkpoint)
  --node PATH        the Node that runs the clients of sdknode, rabbitmqnode and bullmqnode
                     (default: node on PATH; e.g. tests/node/tools/node_modules/node22/bin/node)
  --json             print JSON instead of the table
  -h, --help         this text

Peers: "sdk" is tegami again, driven through its client library (lib/client: TegamiClient's
enqueue, which sends each tick's calls in one request, and consume, which speaks protocol v2)
instead of the raw protocol written by hand. RabbitMQ at 127.0.0.1:5672 guest/guest (TEGAMI_BENCH_AMQP_URL overrides; a fresh quorum
queue per workload), beanstalkd (apt-get install -y beanstalkd; run with -f 0 and with its
default -f 50) and BullMQ on a redis-server the bench starts with appendfsync always.
"pg" is tegami on PostgreSQL, "pg2" two tegami servers on one schema with producers on the
first and consumers on the second (so W5 is the cross-instance push latency), "pgboss" pg-boss
in its fastest mode (bench/peers/pg_boss.ts); all three on TEGAMI_BENCH_PG_URL (default
postgres://postgres@127.0.0.1:5432/postgres), a fresh schema per workload, dropped after.
A peer that cannot be started is skipped with the reason. "floor" is not a queue:
bench/floor_server.ts speaks the same protocol as tegami and stores nothing, to show what the
runtime alone costs; "floorsdk" is that floor driven through the client library, as "sdk" drives
tegami, to show what the runtime alone costs for the library's traffic. "pgfloor" is not a queue
either: tegami's PostgreSQL table driven from the bench with one claim and one ack statement per
batch and no server (bench/peers/pg_floor.ts), in W2 only, to show what PostgreSQL alone does on
this machine. "sdknode", "rabbitmqnode" and "bullmqnode" ("node" selects all three) are tegami,
RabbitMQ and BullMQ again with their clients on Node (tegami's client library, amqplib,
BullMQ) in a process of their own (bench/node/driver.mjs), for W1, W2 and W3: the driver CPU of
their rows is that Node process's. TEGAMI_BENCH_NODE_CLIENT=FILE drives tegami from Node with
another build of the client library (deno bundle --platform browser lib/client/mod.ts).
"sqs" is tegami again, driven through its SQS API with @aws-sdk/client-sqs, in W7 only (batches
of ten: SendMessageBatch, ReceiveMessage of 10 with a 20 s long poll, DeleteMessageBatch), beside
tegami's own API doing the same in batches of ten (a {jobs:[…]} enqueue, a lease of up to 10 with
wait_ms, and the acks in one WebSocket batch frame); compare their server CPU µs/job.
"sqsraw" is the same SQS door with the SDK's requests written by the bench itself
(bench/peers/sqs.ts, client "raw"), in W7 only: the server's work per request is the "sqs"
row's, the driver's CPU about the tegami row's, so it shows the door's own cost apart from the
SDK client's pacing.`;

/** A command-line mistake: printed with the help hint, exit code 2. */
class UsageError extends Error {}

interface Options {
  only: Set<WorkloadKey>;
  jobs: number;
  backlog: number;
  flowChildren: number;
  samples: number;
  repeat: number;
  peers: Set<string>;
  scaleSizes: number[];
  sync: "full" | "normal";
  serveArgs: string[];
  json: boolean;
  fetch: boolean;
  cold: boolean;
  cpuProfileDir: string | undefined;
  w7Rate: number | null;
  v8Flags: string | undefined;
  walPages: boolean;
  node: string;
}

function count(name: string, text: string): number {
  const value = Number(text.replaceAll("_", ""));
  if (!Number.isInteger(value) || value < 1) {
    throw new UsageError(`Invalid --${name}: expected a positive integer, got "${text}"`);
  }
  return value;
}

function parseOptions(args: string[]): Options | null {
  const { values } = parseArgs({
    args,
    options: {
      only: { type: "string" },
      jobs: { type: "string", default: "20000" },
      backlog: { type: "string", default: "50000" },
      "flow-children": { type: "string", default: "10000" },
      samples: { type: "string", default: "2000" },
      repeat: { type: "string", default: "1" },
      peers: { type: "string" },
      pg: { type: "boolean", default: false },
      scale: { type: "boolean", default: false },
      "scale-sizes": { type: "string", default: "100000,1000000" },
      sync: { type: "string", default: "full" },
      "serve-args": { type: "string", default: "" },
      json: { type: "boolean", default: false },
      fetch: { type: "boolean", default: false },
      cold: { type: "boolean", default: false },
      "cpu-prof": { type: "string" },
      "w7-rate": { type: "string" },
      "v8-flags": { type: "string" },
      "wal-pages": { type: "boolean", default: false },
      node: { type: "string", default: "node" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) return null;
  const only = new Set<WorkloadKey>();
  const all = WORKLOADS.filter((w) => w !== "scale").join(",");
  for (const name of (values.only ?? all).split(",").filter((s) => s !== "")) {
    const key = WORKLOADS.find((w) => w.toLowerCase() === name.trim().toLowerCase());
    if (key === undefined) {
      throw new UsageError(`Invalid --only: unknown workload "${name}" (${WORKLOADS.join(", ")})`);
    }
    only.add(key);
  }
  if (values.scale) only.add("scale");
  const peers = new Set<string>();
  if (values.pg && values.peers !== undefined) {
    throw new UsageError("--pg and --peers are exclusive (--pg = --peers " + PG_PEERS + ")");
  }
  const peerList = values.pg ? PG_PEERS.join(",") : values.peers ?? "all";
  for (const name of peerList.split(",").map((s) => s.trim().toLowerCase())) {
    if (name === "all") PEER_KEYS.forEach((key) => peers.add(key));
    else if (name === "node") NODE_PEERS.forEach((key) => peers.add(key));
    else if (name === "none" || name === "") continue;
    else if ((PEER_KEYS as readonly string[]).includes(name)) peers.add(name);
    else {
      throw new UsageError(`Invalid --peers: unknown peer "${name}" (none, all, ${PEER_KEYS})`);
    }
  }
  if (values.sync !== "full" && values.sync !== "normal") {
    throw new UsageError(`Invalid --sync: expected full or normal, got "${values.sync}"`);
  }
  return {
    only,
    jobs: count("jobs", values.jobs),
    backlog: count("backlog", values.backlog),
    flowChildren: count("flow-children", values["flow-children"]),
    samples: count("samples", values.samples),
    repeat: count("repeat", values.repeat),
    peers,
    scaleSizes: values["scale-sizes"].split(",").map((s) => count("scale-sizes", s.trim()))
      .sort((a, b) => a - b),
    sync: values.sync,
    serveArgs: values["serve-args"].split(" ").filter((a) => a !== ""),
    json: values.json,
    fetch: values.fetch,
    cold: values.cold,
    cpuProfileDir: values["cpu-prof"] === undefined ? undefined : resolve(values["cpu-prof"]),
    w7Rate: values["w7-rate"] === undefined ? null : count("w7-rate", values["w7-rate"]),
    v8Flags: values["v8-flags"],
    walPages: values["wal-pages"],
    node: values.node,
  };
}

function asTegami(target: Target): TegamiTarget {
  if (target instanceof TegamiTarget) return target;
  throw new Error(`Cannot run a tegami-only workload on ${target.name}`);
}

function progress(text: string): void {
  console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${text}`);
}

/** The commit measured, and whether the server's code had uncommitted changes. */
async function revision(): Promise<string> {
  const git = async (...args: string[]) => {
    const out = await new Deno.Command("git", { args, cwd: ROOT, stdout: "piped", stderr: "null" })
      .output().catch(() => null);
    return out?.success ? new TextDecoder().decode(out.stdout).trim() : null;
  };
  const head = await git("rev-parse", "--short", "HEAD");
  if (head === null) return "unknown revision";
  const dirty = await git("status", "--porcelain", "--", "main.ts", "lib");
  return dirty ? `${head} + uncommitted changes in main.ts/lib` : head;
}

/** Describes the machine, for the header and for JSON. */
async function machine(): Promise<Record<string, string>> {
  const cpuinfo = await Deno.readTextFile("/proc/cpuinfo").catch(() => "");
  const model = cpuinfo.match(/^model name\s*:\s*(.+)$/m)?.[1] ?? "unknown CPU";
  const mem = (await Deno.readTextFile("/proc/meminfo").catch(() => "")).match(
    /^MemTotal:\s+(\d+)/m,
  );
  // What the rest of the machine is doing right now, measured over a second.
  const busy = cpuMeter([], false);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return {
    revision: await revision(),
    busy: `${busy().machine.toFixed(2)} cores busy before the run`,
    cpu: `${model} × ${navigator.hardwareConcurrency}`,
    memory: mem === null ? "?" : `${Math.round(Number(mem[1]) / 1024 / 1024)} GiB`,
    kernel: Deno.osRelease(),
    deno: Deno.version.deno,
    load: Deno.loadavg().map((l) => l.toFixed(2)).join(" "),
    date: new Date().toISOString(),
  };
}

async function main(): Promise<number> {
  let options: Options | null;
  try {
    options = parseOptions(Deno.args);
  } catch (error) {
    console.error(`bench: ${(error as Error).message}; see --help`);
    return 2;
  }
  if (options === null) {
    console.log(HELP);
    return 0;
  }
  const o = options;
  const startedAt = performance.now();
  const host = await machine();
  const tegami = tegamiPeer({
    sync: o.sync,
    serveArgs: o.serveArgs,
    http: o.fetch ? "fetch" : "lean",
    cpuProfileDir: o.cpuProfileDir,
    v8Flags: o.v8Flags,
  });
  const peers: Peer[] = [];
  if (o.peers.has("sdk")) {
    peers.push(tegamiSdkPeer({
      sync: o.sync,
      serveArgs: o.serveArgs,
      cpuProfileDir: o.cpuProfileDir,
      v8Flags: o.v8Flags,
    }));
  }
  const amqpUrl = Deno.env.get("TEGAMI_BENCH_AMQP_URL") ?? "amqp://guest:guest@127.0.0.1:5672";
  if (o.peers.has("floor")) peers.push(floorPeer(o.fetch ? "fetch" : "lean"));
  if (o.peers.has("floorsdk")) peers.push(floorSdkPeer());
  if (o.peers.has("rabbitmq")) peers.push(rabbitmqPeer(amqpUrl));
  if (o.peers.has("beanstalkd")) peers.push(beanstalkdPeer(0), beanstalkdPeer(50));
  if (o.peers.has("bullmq")) peers.push(bullmqPeer());
  const pgOptions = {
    serveArgs: o.serveArgs,
    http: o.fetch ? "fetch" as const : "lean" as const,
    cpuProfileDir: o.cpuProfileDir,
    v8Flags: o.v8Flags,
  };
  if (o.peers.has("pg")) peers.push(tegamiPgPeer(benchPgUrl(), 1, pgOptions));
  if (o.peers.has("pg2")) peers.push(tegamiPgPeer(benchPgUrl(), 2, pgOptions));
  if (o.peers.has("pgboss")) peers.push(pgBossPeer());
  if (o.peers.has("pgfloor")) peers.push(pgFloorPeer());
  if (o.peers.has("sdknode")) {
    const sdk = tegamiSdkPeer({ sync: o.sync, serveArgs: o.serveArgs, v8Flags: o.v8Flags });
    peers.push(nodePeer(sdk, "tegami", "sdknode", o.node));
  }
  if (o.peers.has("rabbitmqnode")) {
    peers.push(nodePeer(rabbitmqPeer(amqpUrl), "rabbitmq", "rabbitmqnode", o.node));
  }
  if (o.peers.has("bullmqnode")) peers.push(nodePeer(bullmqPeer(), "bullmq", "bullmqnode", o.node));
  const sqsOptions = {
    sync: o.sync,
    serveArgs: o.serveArgs,
    cpuProfileDir: o.cpuProfileDir,
    v8Flags: o.v8Flags,
  };
  const sqs = o.peers.has("sqs") ? sqsPeer(sqsOptions) : null;
  const sqsRaw = o.peers.has("sqsraw") ? sqsPeer({ ...sqsOptions, client: "raw" }) : null;
  const onNode = (p: Peer) => NODE_PEERS.includes(p.key);
  /** Runs `workload` in the Node driver for a target driven from Node, else `here`. */
  const either = (
    t: Target,
    workload: NodeWorkload,
    queue: string,
    jobs: number,
    here: () => Promise<Measurement>,
  ) => t instanceof NodeTarget ? t.run(workload, queue, jobs) : here();

  const runner = new Runner(progress, !o.cold, o.walPages);
  const timings: Record<string, number> = {};
  // The PostgreSQL floor measures W2 only (bench/peers/pg_floor.ts).
  const everyone = [tegami, ...peers.filter((p) => p.key !== "pgfloor")];
  // The groups workloads run on PostgreSQL (one server) too when that peer is asked for.
  const onPg = peers.filter((p) => p.key === "pg");
  // W2's backlog, filled before the server's figures are snapshotted, for the drain that follows.
  const w2 = { queue: "w2", backlog: o.backlog };
  let filled: Filled | undefined;
  const plan: [Exclude<WorkloadKey, "scale">, Peer[], Workload][] = [
    // pg-boss runs inside this process; its server is the shared PostgreSQL.
    ["RSS", everyone.filter((p) => !["sdk", "floorsdk", "pgboss"].includes(p.key) && !onNode(p)), {
      label: "RSS idle",
      throughput: false,
      warm: false,
      run: async (target) => {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        return { jobs: 0, seconds: 0, rssBytes: totalRss(target.pids), notes: [] };
      },
    }],
    ["W1", everyone, {
      label: "W1 end to end",
      run: (t) => either(t, "W1", "w1", o.jobs, () => endToEnd(t, { queue: "w1", jobs: o.jobs })),
    }],
    ["W1g", [tegami, ...onPg], {
      label: "W1g end to end over 1000 groups",
      run: (t) =>
        endToEnd(t, {
          queue: "w1g",
          jobs: o.jobs,
          producer: (q) => asTegami(t).groupedProducer(q, 1000),
        }),
    }],
    ["W1w", [tegami, ...onPg], {
      label: "W1w end to end over 1000 weighted groups",
      prepare: (t) => putWeights(asTegami(t), { queue: "w1w" }),
      run: (t) =>
        endToEnd(t, {
          queue: "w1w",
          jobs: o.jobs,
          producer: (q) => asTegami(t).groupedProducer(q, 1000),
        }),
    }],
    ...[1, 8].map((groupLimit) =>
      [
        "W1w" as const,
        [tegami, ...onPg],
        {
          // jobs/s: the deliveries until the first group ran dry, a drain over 1 000 groups.
          label: `W1w shares of weighted groups, group_limit ${groupLimit}`,
          run: (t: Target) => weightShares(asTegami(t), { queue: "w1w-shares", groupLimit }),
        },
      ] as [Exclude<WorkloadKey, "scale">, Peer[], Workload]
    ),
    ["W2", [tegami, ...peers], {
      label: "W2 drain",
      prepare: async (t) => {
        filled = await fillBacklog(t, w2);
      },
      run: async (t) =>
        t instanceof NodeTarget
          ? { ...await t.run("W2", w2.queue, w2.backlog), rssBytes: filled!.rssBytes }
          : drain(t, w2, filled!),
    }],
    ["W3", everyone, {
      label: "W3 enqueue",
      run: (t) => either(t, "W3", "w3", o.jobs, () => enqueue(t, { queue: "w3", jobs: o.jobs })),
    }],
    ["W3b", [tegami], {
      label: "W3b enqueue over WebSocket",
      run: (t) =>
        enqueue(t, { queue: "w3b", jobs: o.jobs, producer: (q) => asTegami(t).wsProducer(q) }),
    }],
    ["W4", [tegami], {
      label: "W4 batch enqueue",
      run: (t) => batchEnqueue(asTegami(t), { queue: "w4", jobs: o.backlog }),
    }],
    ["W5", everyone.filter((p) => !onNode(p)), {
      label: "W5 idle push latency",
      throughput: false,
      run: (t) => pushLatency(t, { queue: "w5", samples: o.samples }),
    }],
    ["W6", [tegami], {
      label: "W6 rate 500/s for 10 s",
      run: (t) => rateLimit(asTegami(t), { queue: "w6", rate: 500, seconds: 10 }),
    }],
    ["W7", [tegami, ...[sqs, sqsRaw].filter((p) => p !== null)], {
      label: "W7 batches of ten",
      run: (t) =>
        batchesOfTen(t instanceof SqsTarget ? t : nativeBatchDoor(asTegami(t)), {
          queue: "w7",
          jobs: o.jobs,
          rate: o.w7Rate,
        }),
    }],
    // On SQLite, and on PostgreSQL with one server (pg) and two (pg2: created on one, run on
    // the other) when those peers are asked for.
    ["WF", [tegami, ...peers.filter((p) => p.key === "pg" || p.key === "pg2")], {
      label: "WF flow fan-out and fan-in",
      run: (t) => flowFan(asTegami(t), { queue: "wf", children: o.flowChildren }),
    }],
  ];

  for (const [key, systems, workload] of plan) {
    if (!o.only.has(key)) continue;
    const partAt = performance.now();
    await runner.run(workload, systems, key === "RSS" ? 1 : o.repeat);
    timings[key] = (timings[key] ?? 0) + (performance.now() - partAt) / 1000;
  }
  const rows: Row[] = runner.rows;

  if (o.only.has("scale")) {
    const partAt = performance.now();
    rows.push(
      ...await scaling(tegami, {
        jobs: o.jobs,
        samples: o.samples,
        sizes: o.scaleSizes,
        warm: !o.cold,
        progress,
      }),
    );
    timings.scale = (performance.now() - partAt) / 1000;
  }
  timings.total = (performance.now() - startedAt) / 1000;

  const meta: Record<string, string> = {
    ...host,
    sync: o.sync,
    jobs: String(o.jobs),
    backlog: String(o.backlog),
    samples: String(o.samples),
    repeat: String(o.repeat),
  };
  if (o.json) {
    const targets = checkTargets(rows);
    console.log(
      JSON.stringify({ meta, timings_s: timings, rows: jsonRows(rows), targets }, null, 2),
    );
    return 0;
  }
  console.log(
    `\ntegami bench — ${meta.date} — ${meta.cpu}, ${meta.memory}, Linux ${meta.kernel}, ` +
      `Deno ${meta.deno}; ${meta.busy}, load ${meta.load}; tegami ${meta.revision}\n` +
      `tegami --sync ${[o.sync, ...o.serveArgs].join(" ")}${
        o.v8Flags === undefined ? "" : ` (V8 flags ${o.v8Flags})`
      }; ${o.jobs} jobs for W1/W3, ${o.backlog} for W2/W4, ` +
      `${o.samples} W5 samples; ${o.repeat === 1 ? "one run" : `median of ${o.repeat} runs`} ` +
      `of each workload on each system${o.cold ? ", cold" : ", each after a warm-up"}; ` +
      "100-byte JSON payloads; " +
      "CPU in cores: server = the system's processes, driver = this bench process, main = " +
      "their main thread's CPU, waiting = time that thread was runnable but had no CPU, " +
      "machine = every process on the machine\n",
  );
  console.log(markdownTable(rows));
  console.log(`\nTargets (DESIGN.md §8):\n${describeTargets(checkTargets(rows))}`);
  console.log(
    `\ntook ${
      Object.entries(timings).map(([part, s]) => `${part} ${s.toFixed(0)} s`).join(", ")
    }; tegami's event-loop lag, WAL fsyncs and held enqueues are read from its /metrics ` +
      "(tegami_event_loop_lag_seconds, tegami_wal_fsync_duration_seconds, " +
      "tegami_intake_hold_seconds)",
  );
  return 0;
}

Deno.exit(await main());
