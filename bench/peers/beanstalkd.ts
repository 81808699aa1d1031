/**
 * beanstalkd (Debian package `beanstalkd`), started fresh by the bench on a free loopback port
 * with a temp binlog directory (`-b`): `-f 0` fsyncs every write; by default it fsyncs at most
 * every 50 ms, so an acknowledged put may be lost on power loss.
 *
 * beanstalkd has no prefetch: a consumer with prefetch N is N connections, each looping
 * reserve → delete (the delete and the next reserve written together). A producer is one
 * connection with its puts pipelined.
 *
 * @module
 */

import type { Stamp } from "../payload.ts";
import { AckTracker } from "./ack_tracker.ts";
import { BeanstalkClient } from "./beanstalk_client.ts";
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

const decoder = new TextDecoder();
const FILL_WINDOW = 1000;

/** A running beanstalkd. */
class BeanstalkdTarget extends ChildProcessTarget {
  async producer(queue: string): Promise<Producer> {
    const client = await BeanstalkClient.connect(this.port);
    await client.use(queue);
    return {
      send: async (payload) => {
        await client.put(payload);
      },
      close: () => Promise.resolve(client.close()),
    };
  }

  async consumer(queue: string, prefetch: number, onJob: (job: Stamp) => void): Promise<Consumer> {
    const acks = new AckTracker();
    let closed = false;
    const clients = await Promise.all(Array.from({ length: prefetch }, async () => {
      const client = await BeanstalkClient.connect(this.port);
      await client.watch(queue);
      await client.ignore("default");
      return client;
    }));
    for (const client of clients) {
      (async () => {
        let reserved = client.reserve();
        for (;;) {
          const job = await reserved;
          onJob(JSON.parse(decoder.decode(job.body)));
          acks.sent();
          client.delete(job.id).then(() => acks.answered(), () => acks.answered());
          reserved = client.reserve();
        }
      })().catch((error) => {
        if (!closed) console.error(`beanstalkd consumer: ${error.message}`);
      });
    }
    return {
      acked: () => acks.settled(),
      close: () => {
        closed = true;
        for (const client of clients) client.close();
        return Promise.resolve();
      },
    };
  }

  async fill(queue: string, count: number, payload: string): Promise<void> {
    const client = await BeanstalkClient.connect(this.port);
    try {
      await client.use(queue);
      for (let done = 0; done < count; done += FILL_WINDOW) {
        const n = Math.min(FILL_WINDOW, count - done);
        await Promise.all(Array.from({ length: n }, () => client.put(payload)));
      }
    } finally {
      client.close();
    }
  }
}

/**
 * beanstalkd with fsync every `fsyncMs` ms (`-f`; 0 = every write). Unavailable, with the
 * install command, when the binary is missing.
 */
export function beanstalkdPeer(fsyncMs: number): Peer {
  const name = `beanstalkd -f ${fsyncMs}`;
  return {
    key: "beanstalkd",
    name,
    async start() {
      if (!(await onPath("beanstalkd"))) {
        throw new PeerUnavailable(
          "beanstalkd is not installed: install it with `apt-get install -y beanstalkd`",
        );
      }
      const dir = await Deno.makeTempDir({ prefix: "tegami-bench-beanstalkd-" });
      const port = freePort();
      const child = new Deno.Command("beanstalkd", {
        args: ["-l", "127.0.0.1", "-p", String(port), "-b", dir, "-f", String(fsyncMs)],
        stdin: "null",
        stdout: "null",
        stderr: "null", // beanstalkd logs every client that hangs up ("Broken pipe")
      }).spawn();
      try {
        await waitForPort(port);
      } catch (error) {
        child.kill("SIGKILL");
        await child.status;
        await Deno.remove(dir, { recursive: true });
        throw new PeerUnavailable(`beanstalkd did not start: ${(error as Error).message}`);
      }
      return new BeanstalkdTarget(name, child, dir, port);
    },
  };
}
