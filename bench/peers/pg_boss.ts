/**
 * pg-boss (npm `pg-boss`, on `pg`), the PostgreSQL job queue for Node, run in this process under
 * Deno's npm support (it needs nothing Deno lacks: `pg` speaks the protocol over `node:net`), on
 * the same PostgreSQL as tegami's PostgreSQL rows and in a fresh schema per workload, dropped
 * after. Its fastest documented mode: LISTEN/NOTIFY wake-ups (`useListenNotify` and a queue with
 * `notify: true`), workers that fetch `batchSize` = the prefetch jobs per query and complete the
 * whole batch in one more, and keep fetching without a pause while batches come back full
 * (`burstWhenBatchFull`), polling at its floor (0.5 s) otherwise; maintenance and scheduling off
 * so nothing else competes. A producer's `send` is one INSERT per job (the API has no coalescing
 * of single sends); the W2 fill uses `insert` with 1000 jobs per call. The server's CPU and RSS
 * columns are empty: the server is PostgreSQL, shared, and pg-boss's own work is in the driver's
 * column.
 *
 * @module
 */

import { PgBoss } from "pg-boss";
import type { Stamp } from "../payload.ts";
import { type Consumer, type Peer, PeerUnavailable, type Producer, type Target } from "./peer.ts";
import { benchPgUrl, dropSchema, freshSchema } from "./pg_schema.ts";

const FILL_CHUNK = 1000;
const POLL_S = 0.5;

/** pg-boss on a fresh schema. */
class PgBossTarget implements Target {
  readonly name = "pg-boss 12 (batch fetch, NOTIFY)";
  readonly pids: readonly number[] = [];
  readonly singleThreaded = false;
  readonly #boss: PgBoss;
  readonly #schema: string;
  readonly #queues = new Map<string, Promise<void>>();

  constructor(boss: PgBoss, schema: string) {
    this.#boss = boss;
    this.#schema = schema;
  }

  /** Creates `name` once; every caller waits for that one creation. */
  #queue(name: string): Promise<void> {
    let created = this.#queues.get(name);
    if (created === undefined) {
      created = this.#boss.createQueue(name, { notify: true });
      this.#queues.set(name, created);
    }
    return created;
  }

  async producer(queue: string): Promise<Producer> {
    await this.#queue(queue);
    return {
      send: async (payload) => {
        await this.#boss.send(queue, JSON.parse(payload));
      },
      close: () => Promise.resolve(),
    };
  }

  async consumer(queue: string, prefetch: number, onJob: (job: Stamp) => void): Promise<Consumer> {
    await this.#queue(queue);
    let running = 0;
    const id = await this.#boss.work<Stamp>(queue, {
      batchSize: prefetch,
      burstWhenBatchFull: true,
      pollingIntervalSeconds: POLL_S,
      notifyPollingIntervalSeconds: POLL_S,
    }, (jobs) => {
      running++;
      for (const job of jobs) onJob(job.data);
      return Promise.resolve();
    });
    const db = this.#boss.getDb();
    return {
      // pg-boss completes a batch after its handler returns and says nothing when it has: wait
      // until the queue has no active job left.
      acked: async () => {
        if (running === 0) return;
        for (;;) {
          const { rows } = await db.executeSql(
            `SELECT count(*)::int AS n FROM "${this.#schema}".job WHERE name = $1 AND state = 'active'`,
            [queue],
          );
          if (rows[0].n === 0) return;
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
      },
      close: () => this.#boss.offWork(queue, { id, wait: true }),
    };
  }

  async fill(queue: string, count: number, payload: string): Promise<void> {
    await this.#queue(queue);
    const data = JSON.parse(payload);
    for (let left = count; left > 0; left -= FILL_CHUNK) {
      const n = Math.min(FILL_CHUNK, left);
      await this.#boss.insert(queue, Array.from({ length: n }, () => ({ data })));
    }
  }

  async stop(): Promise<void> {
    await this.#boss.stop({ graceful: false, close: true });
    await dropSchema(this.#schema);
  }
}

/** pg-boss on the bench's PostgreSQL (TEGAMI_BENCH_PG_URL), a fresh schema per workload. */
export function pgBossPeer(): Peer {
  return {
    key: "pgboss",
    name: "pg-boss",
    start: async () => {
      const schema = freshSchema("boss");
      const boss = new PgBoss({
        connectionString: benchPgUrl(),
        schema,
        max: 20,
        useListenNotify: true,
        supervise: false,
        schedule: false,
      });
      boss.on("error", (error: Error) => console.error(`pg-boss: ${error.message}`));
      try {
        await boss.start();
      } catch (error) {
        await dropSchema(schema).catch(() => {});
        throw new PeerUnavailable(
          `cannot start pg-boss on ${benchPgUrl()} (set TEGAMI_BENCH_PG_URL): ` +
            (error as Error).message.split("\n")[0],
        );
      }
      return new PgBossTarget(boss, schema);
    },
  };
}
