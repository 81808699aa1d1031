/**
 * BullMQ (npm `bullmq`, with `ioredis`) on a Redis the bench starts: a free loopback port, AOF on
 * with `appendfsync always` (every write fsynced before Redis answers), no RDB snapshots, a temp
 * directory. Jobs are removed on completion (as RabbitMQ and beanstalkd delete acked messages). A
 * producer is a `Queue` (`add` per job); a consumer is a `Worker` whose concurrency is the
 * prefetch, with a processor that returns at once (completion is the ack).
 *
 * @module
 */

import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import type { Stamp } from "../payload.ts";
import { AckTracker } from "./ack_tracker.ts";
import {
  ChildProcessTarget,
  type Consumer,
  freePort,
  onPath,
  type Peer,
  PeerUnavailable,
  type Producer,
  waitForPort,
} from "./peer.ts";

const FILL_CHUNK = 1000;
const JOB_OPTIONS = { removeOnComplete: true, removeOnFail: true };

/** BullMQ on its own Redis. */
class BullTarget extends ChildProcessTarget {
  #redis(): Redis {
    return new Redis({ host: "127.0.0.1", port: this.port, maxRetriesPerRequest: null });
  }

  /** What the Node driver needs to reach this server. */
  nodeSpec(queue: string): Promise<{ spec: Record<string, unknown>; queue: string }> {
    return Promise.resolve({ spec: { redis: { port: this.port } }, queue });
  }

  producer(queue: string): Promise<Producer> {
    const redis = this.#redis();
    const q = new Queue(queue, { connection: redis });
    return Promise.resolve({
      send: async (payload) => {
        await q.add("job", JSON.parse(payload), JOB_OPTIONS);
      },
      close: async () => {
        await q.close();
        redis.disconnect();
      },
    });
  }

  async consumer(queue: string, prefetch: number, onJob: (job: Stamp) => void): Promise<Consumer> {
    const acks = new AckTracker();
    const redis = this.#redis();
    const worker = new Worker(queue, (job) => {
      onJob(job.data);
      acks.sent();
      return Promise.resolve();
    }, { connection: redis, concurrency: prefetch });
    worker.on("completed", () => acks.answered());
    worker.on("failed", () => acks.answered());
    worker.on("error", (error) => console.error(`BullMQ worker: ${error.message}`));
    await worker.waitUntilReady();
    return {
      acked: () => acks.settled(),
      close: async () => {
        await worker.close();
        redis.disconnect();
      },
    };
  }

  async fill(queue: string, count: number, payload: string): Promise<void> {
    const redis = this.#redis();
    const q = new Queue(queue, { connection: redis });
    const data = JSON.parse(payload);
    try {
      for (let done = 0; done < count; done += FILL_CHUNK) {
        const n = Math.min(FILL_CHUNK, count - done);
        await q.addBulk(
          Array.from({ length: n }, () => ({ name: "job", data, opts: JOB_OPTIONS })),
        );
      }
    } finally {
      await q.close();
      redis.disconnect();
    }
  }
}

/** BullMQ on a fresh `redis-server` with `appendfsync always`. */
export function bullmqPeer(): Peer {
  return {
    key: "bullmq",
    name: "BullMQ (Redis fsync always)",
    async start() {
      if (!(await onPath("redis-server"))) {
        throw new PeerUnavailable(
          "redis-server is not installed: install it with `apt-get install -y redis-server`",
        );
      }
      const dir = await Deno.makeTempDir({ prefix: "tegami-bench-redis-" });
      const port = freePort();
      const child = new Deno.Command("redis-server", {
        args: [
          "--port",
          String(port),
          "--bind",
          "127.0.0.1",
          "--appendonly",
          "yes",
          "--appendfsync",
          "always",
          "--dir",
          dir,
          "--save",
          "",
        ],
        stdin: "null",
        stdout: "null",
        stderr: "inherit",
      }).spawn();
      try {
        await waitForPort(port);
      } catch (error) {
        child.kill("SIGKILL");
        await child.status;
        await Deno.remove(dir, { recursive: true });
        throw new PeerUnavailable(`redis-server did not start: ${(error as Error).message}`);
      }
      const probe = new Redis({ host: "127.0.0.1", port, maxRetriesPerRequest: null });
      const info = await probe.info("server");
      probe.disconnect();
      const version = info.match(/redis_version:(\S+)/)?.[1] ?? "?";
      return new BullTarget(`BullMQ (Redis ${version}, fsync always)`, child, dir, port);
    },
  };
}
