/**
 * tegami's own API speaking W7's batches of ten (`bench/workloads/batches_of_ten.ts`), each step
 * one call as SQS's are: a batch enqueue (`POST /v1/queues/{queue}/jobs` with `{jobs:[…]}`), a
 * long-poll lease of up to 10 (`POST /v1/queues/{queue}/leases`), and the acks of what came in one
 * WebSocket `batch` frame (tegami's HTTP API acks one job per request; its WebSocket acks many per
 * frame). Its queue gets the settings SQS's CreateQueue gives a queue (a 4-day retention, the
 * largest group limit, …), so the two doors of W7 serve alike queues and differ by the door only.
 *
 * @module
 */

import type {
  BatchDoor,
  BatchReceiver,
  BatchSender,
  Received,
} from "../workloads/batches_of_ten.ts";
import { BATCH } from "../workloads/batches_of_ten.ts";
import { Http1Client } from "./http1_client.ts";
import { openSocket, type TegamiTarget } from "./tegami.ts";
import { settingsView } from "../../lib/core/queue_settings.ts";
import { newQueueSettings } from "../../lib/sqs/queue_attributes.ts";

/** A delivery of a lease answer, as far as settling it goes. */
interface Leased {
  id: number;
  payload: Received["payload"];
  lease: { token: string };
}

/** A sender of `{jobs:[…]}` batches on its own keep-alive connections. */
function sender(url: string, queue: string): BatchSender {
  const http = new Http1Client(url);
  const path = `/v1/queues/${queue}/jobs`;
  return {
    send: async (payloads) => {
      const body = `{"jobs":[${payloads.map((p) => `{"payload":${p}}`).join(",")}]}`;
      const { status, body: text } = await http.post(path, body);
      if (status !== 201) throw new Error(`Cannot enqueue a batch: ${status} ${text}`);
    },
    close: () => Promise.resolve(http.close()),
  };
}

/** A receiver leasing over HTTP and acking over its own WebSocket. */
async function receiver(url: string, queue: string): Promise<BatchReceiver> {
  const http = new Http1Client(url);
  const path = `/v1/queues/${queue}/leases`;
  const ws = await openSocket(url);
  const waiting = new Map<number, (frame: { op: string; replies?: string[] }) => void>();
  let ref = 0;
  ws.onmessage = (event) => {
    const frame = JSON.parse(event.data);
    waiting.get(frame.ref)?.(frame);
    waiting.delete(frame.ref);
  };
  return {
    receive: async (waitMs) => {
      const { status, body } = await http.post(path, `{"max":${BATCH},"wait_ms":${waitMs}}`);
      if (status !== 200) throw new Error(`Cannot lease: ${status} ${body}`);
      const jobs = JSON.parse(body).jobs as Leased[];
      return jobs.map((job) => ({ payload: job.payload, handle: job }));
    },
    settle: async (received) => {
      const r = ++ref;
      const frames = received.map(({ handle }) => {
        const job = handle as Leased;
        return `{"op":"ack","id":${job.id},"token":"${job.lease.token}"}`;
      });
      const reply = new Promise<{ op: string; replies?: string[] }>((resolve) =>
        waiting.set(r, resolve)
      );
      ws.send(`{"op":"batch","ref":${r},"frames":[${frames.join(",")}]}`);
      const frame = await reply;
      if (frame.op !== "ok") throw new Error(`Cannot ack a batch: ${JSON.stringify(frame)}`);
    },
    close: async () => {
      http.close();
      if (ws.readyState === WebSocket.CLOSED) return;
      const closed = new Promise((resolve) => ws.addEventListener("close", resolve));
      ws.close();
      await closed;
    },
  };
}

/** `target` (tegami on its own API) as a door for W7's batches of ten. */
export function nativeBatchDoor(target: TegamiTarget): BatchDoor {
  const configured = new Map<string, Promise<void>>();
  /** Gives `queue` the settings CreateQueue would, once. */
  const configure = (queue: string) => {
    let done = configured.get(queue);
    if (done === undefined) {
      done = target.putSettings(queue, settingsView(newQueueSettings(queue)));
      configured.set(queue, done);
    }
    return done;
  };
  return {
    get pids() {
      return target.pids;
    },
    singleThreaded: target.singleThreaded,
    batchSender: async (queue) => {
      await configure(queue);
      return sender(target.url, queue);
    },
    batchReceiver: async (queue) => {
      await configure(queue);
      return await receiver(target.consumerUrl, queue);
    },
  };
}
