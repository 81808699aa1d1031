/**
 * tegami again, driven through its SQS API with `@aws-sdk/client-sqs` v3 (the JSON protocol,
 * signed requests) instead of its own API: the same server process as the `tegami` row, so the
 * two rows of a workload compare the doors. Every producer, consumer and fill has its own
 * `SQSClient` (its own connections). Each queue is made with CreateQueue first, as an SQS user
 * would.
 *
 * @module
 */

import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import type { Stamp } from "../payload.ts";
import { range } from "../measurement.ts";
import type { BatchDoor, BatchReceiver, BatchSender } from "../workloads/batches_of_ten.ts";
import { BATCH } from "../workloads/batches_of_ten.ts";
import type { Consumer, Peer, Producer, Target } from "./peer.ts";
import { type TegamiOptions, TegamiTarget } from "./tegami.ts";

/** The name in the table. */
export const SQS_NAME = "tegami via SQS (@aws-sdk/client-sqs)";

/** The fill's requests in flight. */
const FILL_IN_FLIGHT = 8;

/** An SDK client for `url`; without `--tokens` the signature is not checked. */
function sqsClient(url: string): SQSClient {
  return new SQSClient({
    endpoint: url,
    region: "us-east-1",
    credentials: { accessKeyId: "bench", secretAccessKey: "bench" },
    maxAttempts: 1,
  });
}

/** A tegami server driven through its SQS API. */
export class SqsTarget implements Target, BatchDoor {
  readonly name = SQS_NAME;
  readonly singleThreaded = true;
  readonly #server: TegamiTarget;
  readonly #urls = new Map<string, Promise<string>>();
  readonly #admin: SQSClient;

  constructor(server: TegamiTarget) {
    this.#server = server;
    this.#admin = sqsClient(server.url);
  }

  /** The tegami server behind the SQS API (its metrics are the runner's). */
  get inner(): TegamiTarget {
    return this.#server;
  }

  /** The server processes. */
  get pids(): readonly number[] {
    return this.#server.pids;
  }

  /** The URL of `queue`, made with CreateQueue the first time it is asked for. */
  queueUrl(queue: string): Promise<string> {
    let url = this.#urls.get(queue);
    if (url === undefined) {
      url = this.#admin.send(new CreateQueueCommand({ QueueName: queue }))
        .then((out) => out.QueueUrl!);
      this.#urls.set(queue, url);
    }
    return url;
  }

  async producer(queue: string): Promise<Producer> {
    const QueueUrl = await this.queueUrl(queue);
    const client = sqsClient(this.#server.url);
    return {
      send: async (payload) => {
        await client.send(new SendMessageCommand({ QueueUrl, MessageBody: payload }));
      },
      close: () => Promise.resolve(client.destroy()),
    };
  }

  async batchSender(queue: string): Promise<BatchSender> {
    const QueueUrl = await this.queueUrl(queue);
    const client = sqsClient(this.#server.url);
    return {
      send: async (payloads) => {
        const out = await client.send(
          new SendMessageBatchCommand({
            QueueUrl,
            Entries: payloads.map((MessageBody, i) => ({ Id: String(i), MessageBody })),
          }),
        );
        if ((out.Failed ?? []).length > 0) {
          throw new Error(`Cannot send a batch: ${JSON.stringify(out.Failed)}`);
        }
      },
      close: () => Promise.resolve(client.destroy()),
    };
  }

  async batchReceiver(queue: string): Promise<BatchReceiver> {
    const QueueUrl = await this.queueUrl(queue);
    const client = sqsClient(this.#server.url);
    const closing = new AbortController();
    return {
      receive: async (waitMs) => {
        const out = await client.send(
          new ReceiveMessageCommand({
            QueueUrl,
            MaxNumberOfMessages: BATCH,
            WaitTimeSeconds: Math.round(waitMs / 1000),
          }),
          { abortSignal: closing.signal },
        );
        return (out.Messages ?? []).map((m) => ({
          payload: JSON.parse(m.Body!) as Stamp,
          handle: m.ReceiptHandle!,
        }));
      },
      settle: async (received) => {
        const out = await client.send(
          new DeleteMessageBatchCommand({
            QueueUrl,
            Entries: received.map(({ handle }, i) => ({
              Id: String(i),
              ReceiptHandle: handle as string,
            })),
          }),
        );
        if ((out.Failed ?? []).length > 0) {
          throw new Error(`Cannot delete a batch: ${JSON.stringify(out.Failed)}`);
        }
      },
      close: () => {
        closing.abort();
        client.destroy();
        return Promise.resolve();
      },
    };
  }

  /**
   * A consumer of `ceil(prefetch / 10)` receive loops, each pulling up to 10 with a long poll and
   * deleting what it got in one batch.
   */
  async consumer(queue: string, prefetch: number, onJob: (job: Stamp) => void): Promise<Consumer> {
    const receivers = await Promise.all(
      range(Math.ceil(prefetch / BATCH)).map(() => this.batchReceiver(queue)),
    );
    let open = true;
    const loops = receivers.map(async (receiver) => {
      while (open) {
        const got = await receiver.receive(20_000);
        for (const { payload } of got) onJob(payload);
        if (got.length > 0) await receiver.settle(got);
      }
    });
    const running = Promise.all(loops).catch((error) => {
      if (open) throw error;
    });
    return {
      acked: () => Promise.resolve(),
      close: async () => {
        open = false;
        await Promise.all(receivers.map((r) => r.close()));
        await running;
      },
    };
  }

  async fill(queue: string, count: number, payload: string): Promise<void> {
    const sender = await this.batchSender(queue);
    let left = count;
    try {
      await Promise.all(
        range(FILL_IN_FLIGHT).map(async () => {
          while (left > 0) {
            const n = Math.min(BATCH, left);
            left -= n;
            await sender.send(range(n).map(() => payload));
          }
        }),
      );
    } finally {
      await sender.close();
    }
  }

  async stop(): Promise<void> {
    this.#admin.destroy();
    await this.#server.stop();
  }
}

/** Starts fresh tegami servers driven through their SQS API. */
export function sqsPeer(options: TegamiOptions = {}): Peer {
  return {
    key: "sqs",
    name: SQS_NAME,
    start: async () => new SqsTarget(await TegamiTarget.start(options)),
  };
}
