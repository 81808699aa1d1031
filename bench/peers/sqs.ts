/**
 * tegami again, driven through its SQS API with `@aws-sdk/client-sqs` v3 (the JSON protocol,
 * signed requests) instead of its own API: the same server process as the `tegami` row, so the
 * two rows of a workload compare the doors. Every producer, consumer and fill has its own
 * `SQSClient` (its own connections). Each queue is made with CreateQueue first, as an SQS user
 * would.
 *
 * With `client: "raw"`, W7's senders and receivers put the SDK's requests on the wire themselves
 * instead (the same headers and JSON bodies, over a lean keep-alive connection like the `tegami`
 * row's): the server does the same work per request, but the driver spends a small part of the
 * SDK's CPU, so its requests come as close together as the `tegami` row's. The SDK's CPU per call
 * in the bench's process spaces its calls out on a small machine, and a server answering calls
 * that come one at a time spends more per call, whatever the door (each call wakes it, and its
 * writes commit alone): the raw row shows what the SQS door itself costs.
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
import { Http1Client } from "./http1_client.ts";
import type { BatchDoor, BatchReceiver, BatchSender } from "../workloads/batches_of_ten.ts";
import { BATCH } from "../workloads/batches_of_ten.ts";
import type { Consumer, Peer, Producer, Target } from "./peer.ts";
import { type TegamiOptions, TegamiTarget } from "./tegami.ts";

/** The name in the table. */
export const SQS_NAME = "tegami via SQS (@aws-sdk/client-sqs)";
/** The name in the table of the SDK's requests sent without the SDK. */
export const SQS_RAW_NAME = "tegami via SQS (the SDK's requests, lean client)";

/** Who sends the SQS requests of W7: the SDK, or the bench writing the SDK's requests itself. */
export type SqsClientKind = "sdk" | "raw";

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

const encoder = new TextEncoder();

/** The SDK version whose requests {@linkcode RawSqsClient} writes. */
const SDK_AGENT = "aws-sdk-js/3.1178.0";

/**
 * SQS JSON-protocol calls written as `@aws-sdk/client-sqs` writes them: its headers, of its sizes,
 * on keep-alive connections, a connection per call in flight (as the SDK's agent keeps them). The
 * body's SHA-256 and the signature have the right shape but are not computed: a server without
 * `--tokens` checks only their shape.
 */
class RawSqsClient {
  readonly #http: Http1Client;
  readonly #host: string;

  constructor(url: string) {
    this.#http = new Http1Client(url);
    this.#host = new URL(url).host;
  }

  /** Calls `action` with `input`; answers the output, or throws the error the server answered. */
  async call(action: string, input: unknown): Promise<Record<string, unknown>> {
    const body = encoder.encode(JSON.stringify(input));
    const date = new Date().toISOString().replace(/[-:]|\.\d+/g, "");
    const head = "POST / HTTP/1.1\r\ncontent-type: application/x-amz-json-1.0\r\n" +
      `x-amz-target: AmazonSQS.${action}\r\nx-amzn-query-mode: true\r\n` +
      `x-amz-user-agent: ${SDK_AGENT}\r\n` +
      `user-agent: ${SDK_AGENT} ua/2.1 os/linux lang/js md/deno#${Deno.version.deno} ` +
      `api/sqs#3.1178.0 m/N,E,e\r\nhost: ${this.#host}\r\n` +
      `amz-sdk-invocation-id: ${crypto.randomUUID()}\r\namz-sdk-request: attempt=1; max=1\r\n` +
      `x-amz-date: ${date}\r\nx-amz-content-sha256: ${"0".repeat(64)}\r\n` +
      `authorization: AWS4-HMAC-SHA256 Credential=bench/${date.slice(0, 8)}/us-east-1/sqs/` +
      "aws4_request, SignedHeaders=amz-sdk-invocation-id;amz-sdk-request;content-length;" +
      "content-type;host;x-amz-content-sha256;x-amz-date;x-amz-target;x-amz-user-agent;" +
      `x-amzn-query-mode, Signature=${"0".repeat(64)}\r\nConnection: keep-alive\r\n`;
    const { status, body: text } = await this.#http.request(head, body);
    if (status !== 200) throw new Error(`${action} answered ${status}: ${text.slice(0, 300)}`);
    return JSON.parse(text);
  }

  /** Closes every connection (a call waiting in a long poll then fails). */
  close(): void {
    this.#http.close();
  }
}

/** Throws when a batch answer lists failed entries. */
function allSucceeded(what: string, out: { Failed?: unknown[] }): void {
  if ((out.Failed ?? []).length > 0) {
    throw new Error(`Cannot ${what} a batch: ${JSON.stringify(out.Failed)}`);
  }
}

/** A tegami server driven through its SQS API. */
export class SqsTarget implements Target, BatchDoor {
  readonly name: string;
  readonly singleThreaded = true;
  readonly #server: TegamiTarget;
  readonly #urls = new Map<string, Promise<string>>();
  readonly #admin: SQSClient;
  readonly #client: SqsClientKind;

  /** `server` driven by `client`: the SDK, or (W7's senders and receivers only) raw requests. */
  constructor(server: TegamiTarget, client: SqsClientKind = "sdk") {
    this.#server = server;
    this.#admin = sqsClient(server.url);
    this.#client = client;
    this.name = client === "sdk" ? SQS_NAME : SQS_RAW_NAME;
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
    if (this.#client === "raw") {
      const conn = new RawSqsClient(this.#server.url);
      return {
        send: async (payloads) => {
          const Entries = payloads.map((MessageBody, i) => ({ Id: String(i), MessageBody }));
          allSucceeded("send", await conn.call("SendMessageBatch", { QueueUrl, Entries }));
        },
        close: () => Promise.resolve(conn.close()),
      };
    }
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
    if (this.#client === "raw") return this.#rawReceiver(QueueUrl);
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

  #rawReceiver(QueueUrl: string): BatchReceiver {
    const conn = new RawSqsClient(this.#server.url);
    return {
      receive: async (waitMs) => {
        const out = await conn.call("ReceiveMessage", {
          QueueUrl,
          MaxNumberOfMessages: BATCH,
          WaitTimeSeconds: Math.round(waitMs / 1000),
        });
        const messages = (out.Messages ?? []) as { Body: string; ReceiptHandle: string }[];
        return messages.map((m) => ({
          payload: JSON.parse(m.Body) as Stamp,
          handle: m.ReceiptHandle,
        }));
      },
      settle: async (received) => {
        const Entries = received.map(({ handle }, i) => ({
          Id: String(i),
          ReceiptHandle: handle as string,
        }));
        allSucceeded("delete", await conn.call("DeleteMessageBatch", { QueueUrl, Entries }));
      },
      // A receive waiting in its long poll ends with its connection.
      close: () => Promise.resolve(conn.close()),
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

/**
 * Starts fresh tegami servers driven through their SQS API: by the SDK (`sqs`), or with `client:
 * "raw"` by the bench writing the SDK's requests itself (`sqsraw`, W7 only).
 */
export function sqsPeer(options: TegamiOptions & { client?: SqsClientKind } = {}): Peer {
  const { client = "sdk", ...tegami } = options;
  return {
    key: client === "sdk" ? "sqs" : "sqsraw",
    name: client === "sdk" ? SQS_NAME : SQS_RAW_NAME,
    start: async () => new SqsTarget(await TegamiTarget.start(tegami), client),
  };
}
