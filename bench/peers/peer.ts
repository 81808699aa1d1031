/**
 * The seam every system under test implements, tegami included: start a fresh instance, make
 * producers and consumers with its usual client, pre-fill a queue, stop. The workloads only see
 * this interface, so W1–W3 and W5 run the same code against every system.
 *
 * @module
 */

import type { Stamp } from "../payload.ts";

/** Sends jobs; `send` resolves once the system has acknowledged the job durably (as it defines it). */
export interface Producer {
  /** Enqueues one job whose payload is the JSON text `payload`. */
  send(payload: string): Promise<void>;
  /** Closes the producer's connections. */
  close(): Promise<void>;
}

/** Receives jobs and acks each one as soon as `onJob` returns. */
export interface Consumer {
  /** Resolves once every ack sent so far is answered (at once for systems that never answer). */
  acked(): Promise<void>;
  /** Stops consuming and closes its connections; unacked jobs go back to the system. */
  close(): Promise<void>;
}

/** A running instance of a system, fresh for one workload. */
export interface Target {
  /** Display name, e.g. `RabbitMQ 3.10 (quorum)`. */
  readonly name: string;
  /** Processes whose CPU and RSS count as the server's. */
  readonly pids: readonly number[];
  /** Whether the first pid's main thread does the server's work, so its CPU is worth showing. */
  readonly singleThreaded: boolean;
  /** A producer on `queue`. */
  producer(queue: string): Promise<Producer>;
  /** A consumer of `queue` holding at most `prefetch` unacked jobs; calls `onJob` per delivery. */
  consumer(queue: string, prefetch: number, onJob: (job: Stamp) => void): Promise<Consumer>;
  /** Enqueues `count` copies of `payload` on `queue` as fast as the system allows (batches). */
  fill(queue: string, count: number, payload: string): Promise<void>;
  /** Stops the instance (or removes its queues, for a shared server) and frees everything. */
  stop(): Promise<void>;
}

/**
 * The shared part of a target that is one child process on its own port with its own data dir
 * (beanstalkd, redis for BullMQ): its pid, and a stop that ends it and removes the dir.
 */
export abstract class ChildProcessTarget implements Target {
  readonly singleThreaded = true;
  readonly name: string;
  protected readonly child: Deno.ChildProcess;
  protected readonly dir: string;
  protected readonly port: number;

  constructor(name: string, child: Deno.ChildProcess, dir: string, port: number) {
    this.name = name;
    this.child = child;
    this.dir = dir;
    this.port = port;
  }

  get pids(): readonly number[] {
    return [this.child.pid];
  }

  abstract producer(queue: string): Promise<Producer>;
  abstract consumer(
    queue: string,
    prefetch: number,
    onJob: (job: Stamp) => void,
  ): Promise<Consumer>;
  abstract fill(queue: string, count: number, payload: string): Promise<void>;

  async stop(): Promise<void> {
    try {
      this.child.kill("SIGTERM");
    } catch {
      // already gone
    }
    await this.child.status;
    await Deno.remove(this.dir, { recursive: true });
  }
}

/** A system the bench can start. */
export interface Peer {
  /** The name used by `--peers`. */
  readonly key: string;
  /** Display name, as its targets are named. */
  readonly name: string;
  /** Starts a fresh instance; throws {@linkcode PeerUnavailable} with the reason when it cannot. */
  start(): Promise<Target>;
}

/** A peer that cannot run here; the message says why and how to fix it. */
export class PeerUnavailable extends Error {
  /** Makes the error with a one-line reason. */
  constructor(message: string) {
    super(message);
    this.name = "PeerUnavailable";
  }
}

/** A free TCP port on loopback (bound then released; a small race, fine for a bench). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Waits until something accepts TCP connections on `port`, or throws after `timeoutMs`. */
export async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      conn.close();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** Whether `command` is on PATH (as `command -v` finds it). */
export async function onPath(command: string): Promise<boolean> {
  try {
    const out = await new Deno.Command("sh", {
      args: ["-c", `command -v ${command}`],
      stdout: "null",
      stderr: "null",
    }).output();
    return out.success;
  } catch {
    return false;
  }
}
