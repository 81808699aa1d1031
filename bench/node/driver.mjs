// The bench's driver on Node: runs one workload (W1, W2 or W3) against one system through the
// client users run on Node — tegami's client library (bundled by `deno bundle`), amqplib for
// RabbitMQ, BullMQ — so that the client's CPU per job is Node's, as in most users' workers.
// Spawned by bench/peers/node_target.ts with the workload as JSON in argv[2]; it runs a short
// W1 on a queue of its own first (a fresh Node has not compiled the client's hot paths), then
// writes one JSON line `{"event":"start"}` when its clock starts and `{"event":"stop"}` when it
// stops, before closing its connections (the bench reads its CPU from /proc between the two),
// then `{"event":"done", …}` with the result. Nothing else goes to stdout. With `waitForStdin`
// it exits only once the bench closes its stdin, so /proc is read while it lives.
//
// The workloads mirror bench/workloads/{end_to_end,drain,enqueue}.ts: 100-byte payloads
// stamped with their number and send time; W1 counts from the first send to the last receipt,
// W2 from the first receipt to the last, W3 from the first send to the last acknowledgement.

import { createRequire } from "node:module";

/**
 * @typedef {{ send(payload: string): Promise<void>, close(): Promise<void> }} Producer
 * @typedef {{ close(): Promise<void> }} Consumer
 * @typedef {{
 *   producer(queue: string): Promise<Producer>,
 *   consumer(queue: string, prefetch: number, onJob: (job: any) => void): Promise<Consumer>,
 *   close(): Promise<void>,
 * }} Client
 */

const PAYLOAD_BYTES = 100;
const now = () => performance.timeOrigin + performance.now();

function stampedPayload(n) {
  const head = `{"n":${n},"t":${now()}`;
  const room = PAYLOAD_BYTES - head.length - `,"pad":""}`.length;
  return `${head},"pad":"${"x".repeat(room)}"}`;
}

const range = (n) => Array.from({ length: n }, (_, i) => i);

/** Rejects when `progress()` stands still for 30 s, so a lost job cannot hang the bench. */
async function guarded(work, progress, what) {
  let last = progress();
  let lastChange = performance.now();
  let timer;
  const stalled = new Promise((_, reject) => {
    timer = setInterval(() => {
      const seen = progress();
      if (seen !== last) {
        last = seen;
        lastChange = performance.now();
      } else if (performance.now() - lastChange > 30_000) {
        reject(new Error(`${what} stalled: no progress for 30 s at ${seen}`));
      }
    }, 250);
  });
  try {
    return await Promise.race([work, stalled]);
  } finally {
    clearInterval(timer);
  }
}

/** Writes one line to the bench; resolves once it is handed to the pipe. */
function emit(line) {
  return new Promise((resolve) => process.stdout.write(JSON.stringify(line) + "\n", resolve));
}

/** p50, p99 and max of `samples` (ms), nearest rank, as bench/stats.ts computes them. */
function summarize(samples) {
  const sorted = Float64Array.from(samples).sort();
  const at = (p) =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
  return { count: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] };
}

/** W1: `producers` × `inflight` sends in flight and `consumers` consumers at once. */
async function endToEnd(client, spec, queue, jobs, onStart = () => {}, onStop = () => {}) {
  const { producers = 4, inflight = 32, consumers = 4, prefetch = 32 } = spec;
  const latencies = new Float64Array(jobs);
  const seen = new Uint8Array(jobs);
  let received = 0;
  let resolveAll;
  const allReceived = new Promise((resolve) => resolveAll = resolve);
  const onJob = (job) => {
    if (job.n === undefined || seen[job.n] === 1) return;
    seen[job.n] = 1;
    latencies[job.n] = now() - job.t;
    if (++received === jobs) resolveAll();
  };
  const subscribed = await Promise.all(
    range(consumers).map(() => client.consumer(queue, prefetch, onJob)),
  );
  const senders = await Promise.all(range(producers).map(() => client.producer(queue)));
  try {
    let next = 0;
    onStart();
    const startedAt = performance.now();
    const sending = Promise.all(senders.flatMap((producer) =>
      range(inflight).map(async () => {
        while (next < jobs) await producer.send(stampedPayload(next++));
      })
    ));
    await guarded(Promise.all([sending, allReceived]), () => next + received, "W1");
    const seconds = (performance.now() - startedAt) / 1000;
    onStop();
    return { jobs, seconds, latencies };
  } finally {
    await Promise.all([...senders, ...subscribed].map((c) => c.close()));
  }
}

/** W2: `consumers` consumers drain a backlog of `jobs` the bench filled. */
async function drain(client, spec, queue, jobs, onStart, onStop) {
  const { consumers = 4, prefetch = 32 } = spec;
  let received = 0;
  let startedAt = 0;
  let resolveAll;
  const drained = new Promise((resolve) => resolveAll = resolve);
  const onJob = () => {
    if (received === 0) {
      onStart();
      startedAt = performance.now();
    }
    if (++received === jobs) resolveAll();
  };
  const subscribed = await Promise.all(
    range(consumers).map(() => client.consumer(queue, prefetch, onJob)),
  );
  try {
    await guarded(drained, () => received, "W2");
    const seconds = (performance.now() - startedAt) / 1000;
    onStop();
    return { jobs, seconds };
  } finally {
    await Promise.all(subscribed.map((c) => c.close()));
  }
}

/** W3: `producers` × `inflight` sends in flight into a queue nobody consumes. */
async function enqueue(client, spec, queue, jobs, onStart, onStop) {
  const { producers = 4, inflight = 32 } = spec;
  const senders = await Promise.all(range(producers).map(() => client.producer(queue)));
  try {
    let next = 0;
    let acked = 0;
    onStart();
    const startedAt = performance.now();
    const sending = Promise.all(senders.flatMap((producer) =>
      range(inflight).map(async () => {
        while (next < jobs) {
          await producer.send(stampedPayload(next++));
          acked++;
        }
      })
    ));
    await guarded(sending, () => acked, "W3");
    const seconds = (performance.now() - startedAt) / 1000;
    onStop();
    return { jobs, seconds };
  } finally {
    await Promise.all(senders.map((p) => p.close()));
  }
}

/** tegami through its client library: `TegamiClient.enqueue` and `consume`. */
async function tegamiClient(spec) {
  const { consume, TegamiClient } = await import(spec.tegami.client);
  const url = spec.tegami.url;
  return {
    producer(queue) {
      const client = new TegamiClient({ url });
      return Promise.resolve({
        send: async (payload) => {
          await client.enqueue(queue, JSON.parse(payload));
        },
        close: () => Promise.resolve(),
      });
    },
    async consumer(queue, prefetch, onJob) {
      const worker = consume(queue, (payload) => {
        onJob(payload);
      }, { url, prefetch, concurrency: prefetch });
      await worker.ready();
      return { close: () => worker.close() };
    },
    async fill(queue, count, payload) {
      const client = new TegamiClient({ url });
      const job = { payload: JSON.parse(payload) };
      for (let done = 0; done < count; done += 1000) {
        await client.enqueueBatch(queue, Array(Math.min(1000, count - done)).fill(job));
      }
    },
    close: () => Promise.resolve(),
  };
}

/** RabbitMQ through amqplib: confirms per send, manual acks, as bench/peers/rabbitmq.ts. */
function rabbitClient(spec, require) {
  const amqp = require("amqplib");
  const url = spec.amqp.url;
  const declared = new Map();
  // The bench declares the queues too (and deletes them after); this makes the driver whole.
  // Once per queue, and everyone waits for it: quorum queues declared at once race.
  const declare = (channel, queue) => {
    if (!declared.has(queue)) {
      declared.set(
        queue,
        channel.assertQueue(queue, { durable: true, arguments: { "x-queue-type": "quorum" } }),
      );
    }
    return declared.get(queue);
  };
  return {
    async producer(queue) {
      const connection = await amqp.connect(url);
      const channel = await connection.createConfirmChannel();
      await declare(channel, queue);
      return {
        send: (payload) =>
          new Promise((resolve, reject) => {
            channel.sendToQueue(queue, Buffer.from(payload), { persistent: true }, (error) => {
              if (error) reject(new Error(`RabbitMQ refused a message: ${error}`));
              else resolve();
            });
          }),
        close: () => connection.close(),
      };
    },
    async consumer(queue, prefetch, onJob) {
      const connection = await amqp.connect(url);
      const channel = await connection.createChannel();
      await declare(channel, queue);
      await channel.prefetch(prefetch);
      await channel.consume(queue, (message) => {
        if (message === null) return;
        onJob(JSON.parse(message.content.toString()));
        channel.ack(message);
      }, { noAck: false });
      return { close: () => connection.close() };
    },
    async fill(queue, count, payload) {
      const connection = await amqp.connect(url);
      const channel = await connection.createConfirmChannel();
      await declare(channel, queue);
      for (let done = 0; done < count; done += 1000) {
        for (let i = 0; i < Math.min(1000, count - done); i++) {
          channel.sendToQueue(queue, Buffer.from(payload), { persistent: true });
        }
        await channel.waitForConfirms();
      }
      await connection.close();
    },
    close: () => Promise.resolve(),
  };
}

/** BullMQ: a `Queue` per producer (`add` per job), a `Worker` per consumer, as bullmq.ts. */
function bullClient(spec, require) {
  const { Queue, Worker } = require("bullmq");
  const { Redis } = require("ioredis");
  const redis = () =>
    new Redis({ host: "127.0.0.1", port: spec.redis.port, maxRetriesPerRequest: null });
  const options = { removeOnComplete: true, removeOnFail: true };
  return {
    producer(queue) {
      const connection = redis();
      const q = new Queue(queue, { connection });
      return Promise.resolve({
        send: async (payload) => {
          await q.add("job", JSON.parse(payload), options);
        },
        close: async () => {
          await q.close();
          connection.disconnect();
        },
      });
    },
    async consumer(queue, prefetch, onJob) {
      const connection = redis();
      const worker = new Worker(queue, (job) => {
        onJob(job.data);
        return Promise.resolve();
      }, { connection, concurrency: prefetch });
      worker.on("error", (error) => console.error(`BullMQ worker: ${error.message}`));
      await worker.waitUntilReady();
      return {
        close: async () => {
          await worker.close();
          connection.disconnect();
        },
      };
    },
    close: () => Promise.resolve(),
  };
}

async function main() {
  const spec = JSON.parse(process.argv[2]);
  // amqplib and BullMQ come from the project's node_modules (deno install puts them there).
  const require = createRequire(spec.modules ?? import.meta.url);
  /** @type {Client} */
  const client = spec.system === "tegami"
    ? await tegamiClient(spec)
    : spec.system === "rabbitmq"
    ? rabbitClient(spec, require)
    : bullClient(spec, require);
  if (spec.warmUp > 0) await endToEnd(client, spec, spec.warmUpQueue, spec.warmUp);
  // Standalone runs (profiling without the bench) fill W2's backlog themselves.
  if (spec.fill) {
    await client.fill(spec.queue, spec.jobs, `{"filler":true,"pad":"${"x".repeat(78)}"}`);
  }
  let cpuAt = process.cpuUsage();
  const onStart = () => {
    cpuAt = process.cpuUsage();
    void emit({ event: "start" });
  };
  const run = { W1: endToEnd, W2: drain, W3: enqueue }[spec.workload];
  let cpu;
  const onStop = () => {
    cpu = process.cpuUsage(cpuAt);
    void emit({ event: "stop" });
  };
  const result = await run(client, spec, spec.queue, spec.jobs, onStart, onStop);
  await emit({
    event: "done",
    jobs: result.jobs,
    seconds: result.seconds,
    latency: result.latencies === undefined ? null : summarize(result.latencies),
    node: process.version,
    // This process's own CPU over the measured part, µs (the bench reads /proc as well).
    cpuMicros: cpu.user + cpu.system,
  });
  await client.close();
  // The bench reads this process's CPU from /proc when it reads "stop": stay until it is done.
  if (spec.waitForStdin) {
    await new Promise((resolve) => {
      process.stdin.on("data", () => {});
      process.stdin.on("end", resolve);
      process.stdin.on("close", resolve);
    });
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error?.stack ?? String(error));
  process.exit(1);
});
