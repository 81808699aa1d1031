/**
 * Short forms of the HTTP calls end-to-end tests repeat: enqueue a job, lease one, wait until a
 * long-poll is parked, and send raw bytes when `fetch` would tidy up the request.
 *
 * @module
 */

import assert from "node:assert/strict";
import { settle, type TestServer } from "./test_server.ts";

/** Every field of a job as `GET /v1/jobs/{id}` shows it, sorted. */
export const JOB_FIELDS = [
  "attempts",
  "attributes",
  "backoff",
  "checkpoint",
  "created_at",
  "dead_lettered_from",
  "finished_at",
  "group",
  "id",
  "key",
  "key_expires_at",
  "last_error",
  "lease_expires_at",
  "lease_ms",
  "max_attempts",
  "payload",
  "priority",
  "progress",
  "progress_at",
  "queue",
  "result",
  "run_at",
  "state",
];

/** Enqueues one job (`{payload, …}`) and answers its id; fails the test unless 201. */
export async function enqueue(
  server: TestServer,
  queue: string,
  job: Record<string, unknown>,
  headers?: HeadersInit,
): Promise<number> {
  const answer = await server.request("POST", `/v1/queues/${queue}/jobs`, job, headers);
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  return answer.body.id;
}

/** A delivery as the lease call answers it. */
export interface DeliveryBody {
  id: number;
  queue: string;
  payload: unknown;
  priority: number;
  key: string | null;
  attempt: number;
  max_attempts: number;
  checkpoint: unknown;
  created_at: number;
  lease: { token: string; expires_at: number };
}

/** Leases jobs with `body` (`{max?, wait_ms?, lease_ms?}`); fails the test unless 200. */
export async function lease(
  server: TestServer,
  queue: string,
  body: Record<string, unknown> = {},
  headers?: HeadersInit,
): Promise<DeliveryBody[]> {
  const answer = await server.request("POST", `/v1/queues/${queue}/leases`, body, headers);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.jobs;
}

/** Leases exactly one job and answers it; fails the test if there is none. */
export async function leaseOne(
  server: TestServer,
  queue: string,
  body: Record<string, unknown> = {},
): Promise<DeliveryBody> {
  const jobs = await lease(server, queue, { ...body, max: 1 });
  assert.equal(jobs.length, 1, `expected a job from queue "${queue}"`);
  return jobs[0];
}

/**
 * Waits until the queue's stats show `count` consumers (a parked long-poll counts as one), so
 * a test knows the long-poll is waiting before it makes a job available.
 */
export async function untilConsumers(
  server: TestServer,
  queue: string,
  count: number,
  headers?: HeadersInit,
): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const stats = await server.request("GET", `/v1/queues/${queue}`, undefined, headers);
    if (stats.body.consumers === count) return;
    await settle(1);
  }
  assert.fail(`queue "${queue}" never had ${count} consumers`);
}

/** True once `promise` has settled (checked after letting pending work run). */
export async function hasSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(() => settled = true, () => settled = true);
  await settle();
  return settled;
}

/** A raw HTTP/1.1 connection, for requests `fetch` cannot send (bad framing, `Expect`). */
export class RawHttp implements Disposable {
  readonly #conn: Deno.TcpConn;
  readonly #decoder = new TextDecoder();

  private constructor(conn: Deno.TcpConn) {
    this.#conn = conn;
  }

  /** Connects to the test server. */
  static async connect(server: TestServer): Promise<RawHttp> {
    return new RawHttp(await Deno.connect({ hostname: "127.0.0.1", port: server.server.port }));
  }

  /** Writes text or bytes as they are. */
  async write(data: string | Uint8Array): Promise<void> {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    let at = 0;
    while (at < bytes.length) at += await this.#conn.write(bytes.subarray(at));
  }

  /** Signals the end of what this side sends (half-close). */
  async endWrite(): Promise<void> {
    await this.#conn.closeWrite();
  }

  /** Reads until `text` has arrived (or the connection ends); answers all that was read. */
  async readUntil(text: string): Promise<string> {
    let out = "";
    const buffer = new Uint8Array(4096);
    while (!out.includes(text)) {
      const n = await this.#conn.read(buffer).catch(() => null);
      if (n === null) break;
      out += this.#decoder.decode(buffer.subarray(0, n), { stream: true });
    }
    return out;
  }

  /** Reads until the server closes the connection. */
  async readAll(): Promise<string> {
    return await this.readUntil("\u0000never\u0000");
  }

  [Symbol.dispose](): void {
    try {
      this.#conn.close();
    } catch {
      // already closed
    }
  }
}

/** Splits a raw HTTP/1.1 answer into its status and JSON body (null when not JSON). */
export function parseRawAnswer(text: string): { status: number; body: unknown } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? "0");
  const bodyText = text.slice(text.indexOf("\r\n\r\n") + 4);
  try {
    return { status, body: JSON.parse(bodyText) };
  } catch {
    return { status, body: null };
  }
}

/** Reads a job; fails the test unless 200. */
// deno-lint-ignore no-explicit-any
export async function getJob(server: TestServer, id: number): Promise<any> {
  const answer = await server.request("GET", `/v1/jobs/${id}`);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
}

/** Reads a queue's stats; fails the test unless 200. */
// deno-lint-ignore no-explicit-any
export async function queueStats(server: TestServer, queue: string): Promise<any> {
  const answer = await server.request("GET", `/v1/queues/${queue}`);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
}

/** Enqueues a job with one attempt, leases it and nacks it dead; answers its id. */
export async function deadJob(
  server: TestServer,
  queue: string,
  payload: unknown,
): Promise<number> {
  const id = await enqueue(server, queue, { payload, max_attempts: 1 });
  const job = await leaseOne(server, queue);
  assert.equal(job.id, id);
  const nack = await server.request("POST", `/v1/jobs/${id}/nack`, {
    token: job.lease.token,
    dead: true,
  });
  assert.equal(nack.body.state, "dead");
  return id;
}
