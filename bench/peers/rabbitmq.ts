/**
 * RabbitMQ, as the machine runs it (127.0.0.1:5672, guest/guest; `TEGAMI_BENCH_AMQP_URL`
 * overrides), through npm `amqplib`: a quorum queue declared fresh per workload and deleted
 * after, persistent messages, publisher confirms (a send resolves on its confirm), manual acks,
 * prefetch per consumer. Every producer and consumer has its own connection.
 *
 * The server is shared, so its CPU and RSS are those of the whole `beam.smp` process.
 *
 * @module
 */

import amqp from "amqplib";
import { Buffer } from "node:buffer";
import type { Stamp } from "../payload.ts";
import { findProcess } from "../proc.ts";
import type { Consumer, Peer, Producer, Target } from "./peer.ts";
import { PeerUnavailable } from "./peer.ts";

const FILL_WINDOW = 1000;
const QUEUE_ARGS = { durable: true, arguments: { "x-queue-type": "quorum" } };

type Connection = Awaited<ReturnType<typeof amqp.connect>>;

/** The RabbitMQ server, with the queues this bench declared on it. */
class RabbitTarget implements Target {
  readonly singleThreaded = false;
  readonly name: string;
  readonly pids: readonly number[];
  readonly #url: string;
  readonly #admin: Connection;
  readonly #prefix: string;
  readonly #queues = new Set<string>();

  constructor(name: string, url: string, admin: Connection, pid: number | null) {
    this.name = name;
    this.#url = url;
    this.#admin = admin;
    this.pids = pid === null ? [] : [pid];
    this.#prefix = `tegami-bench-${Date.now().toString(36)}-`;
  }

  /** Declares the quorum queue behind `queue` (once) and answers its real name. */
  async #declare(queue: string): Promise<string> {
    const name = this.#prefix + queue;
    if (!this.#queues.has(name)) {
      this.#queues.add(name);
      const channel = await this.#admin.createChannel();
      await channel.assertQueue(name, QUEUE_ARGS);
      await channel.close();
    }
    return name;
  }

  /** What the Node driver needs to reach this server, with the queue declared for it. */
  async nodeSpec(queue: string): Promise<{ spec: Record<string, unknown>; queue: string }> {
    return { spec: { amqp: { url: this.#url } }, queue: await this.#declare(queue) };
  }

  async producer(queue: string): Promise<Producer> {
    const name = await this.#declare(queue);
    const connection = await amqp.connect(this.#url);
    const channel = await connection.createConfirmChannel();
    return {
      send: (payload) =>
        new Promise<void>((resolve, reject) => {
          channel.sendToQueue(name, Buffer.from(payload), { persistent: true }, (error) => {
            if (error) reject(new Error(`RabbitMQ refused a message: ${error}`));
            else resolve();
          });
        }),
      close: () => connection.close(),
    };
  }

  async consumer(queue: string, prefetch: number, onJob: (job: Stamp) => void): Promise<Consumer> {
    const name = await this.#declare(queue);
    const connection = await amqp.connect(this.#url);
    const channel = await connection.createChannel();
    await channel.prefetch(prefetch);
    await channel.consume(name, (message) => {
      if (message === null) return;
      onJob(JSON.parse(message.content.toString()));
      channel.ack(message);
    }, { noAck: false });
    return {
      // basic.ack has no answer in AMQP 0-9-1.
      acked: () => Promise.resolve(),
      close: () => connection.close(),
    };
  }

  async fill(queue: string, count: number, payload: string): Promise<void> {
    const name = await this.#declare(queue);
    const channel = await this.#admin.createConfirmChannel();
    const content = Buffer.from(payload);
    try {
      for (let done = 0; done < count; done += FILL_WINDOW) {
        const n = Math.min(FILL_WINDOW, count - done);
        for (let i = 0; i < n; i++) channel.sendToQueue(name, content, { persistent: true });
        await channel.waitForConfirms();
      }
    } finally {
      await channel.close();
    }
  }

  async stop(): Promise<void> {
    try {
      const channel = await this.#admin.createChannel();
      for (const name of this.#queues) await channel.deleteQueue(name);
      await channel.close();
    } finally {
      await this.#admin.close();
    }
  }
}

/** The machine's RabbitMQ; unavailable (with the reason) when it does not answer. */
export function rabbitmqPeer(url: string): Peer {
  return {
    key: "rabbitmq",
    name: "RabbitMQ (quorum)",
    async start() {
      let admin: Connection;
      try {
        admin = await amqp.connect(url);
      } catch (error) {
        throw new PeerUnavailable(
          `RabbitMQ does not answer at ${url.replace(/\/\/[^@]*@/, "//")}: ${
            (error as Error).message
          } (start it, e.g. \`rabbitmq-server -detached\`, or set TEGAMI_BENCH_AMQP_URL)`,
        );
      }
      const version = String(admin.connection?.serverProperties?.version ?? "");
      const name = version === "" ? "RabbitMQ (quorum)" : `RabbitMQ ${version} (quorum)`;
      return new RabbitTarget(name, url, admin, findProcess("beam.smp"));
    },
  };
}
