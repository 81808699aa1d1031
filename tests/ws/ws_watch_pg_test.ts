/**
 * Watching jobs across servers: two tegami servers on one PostgreSQL schema, in this process. A
 * socket watching a job on one server is sent the progress reports and the end of the job as
 * the other server's consumer makes them. Every frame is checked against the AsyncAPI document.
 */

import assert from "node:assert/strict";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../helpers/pg.ts";
import { pgPairTest } from "../helpers/pg_pair.ts";
import { type Frame, WsClient, wsUrl } from "../helpers/ws_client.ts";

const db = await pgTestDatabase();

/** Frames crossing servers ride PostgreSQL's notifications: allow for a loaded machine. */
const CROSS_MS = 5_000;

const about = (op: string, id: number) => (f: Frame) => f.op === op && f.id === id;

pgPairTest(
  db,
  "a watch on one server hears the progress and end made through the other",
  async (a, b) => {
    await using watcher = await WsClient.connect(wsUrl(a.url));
    await using worker = await WsClient.connect(wsUrl(b.url));
    const { id } = await worker.ok({ op: "enqueue", queue: "x", payload: 1 });
    assert.equal((await watcher.ok({ op: "watch", id })).state, "pending");
    await worker.subscribe("x", 1);
    const job = await worker.nextJob("x");
    await worker.ok({ op: "progress", id, token: job.lease.token, progress: { half: true } });
    const progressed = await watcher.next(about("progressed", id), CROSS_MS);
    assert.deepEqual(progressed.progress, { half: true });
    await worker.ok({ op: "ack", id, token: job.lease.token, result: "far" });
    const ended = await watcher.next(about("ended", id), CROSS_MS);
    assert.equal(ended.state, "done");
    assert.equal(ended.result, "far");
  },
);

pgPairTest(
  db,
  "a flow created on one server releases its nodes to the other's consumers, with outcomes",
  async (a, b) => {
    await using producer = await WsClient.connect(wsUrl(a.url));
    await using consumer = await WsClient.connect(wsUrl(b.url));
    await consumer.subscribe("f", 4);
    const { jobs } = await producer.ok({
      op: "flow",
      nodes: [
        { ref: "first", queue: "f", payload: 1 },
        { ref: "second", queue: "f", payload: 2, depends_on: ["first"] },
      ],
    });
    const first = await consumer.nextJob("f", CROSS_MS);
    assert.equal(first.id, jobs.first);
    await consumer.ok({ op: "ack", id: first.id, token: first.lease.token, result: 10 });
    const second = await consumer.nextJob("f", CROSS_MS);
    assert.equal(second.id, jobs.second);
    assert.deepEqual(second.prerequisites.map((o: Frame) => [o.ref, o.result]), [["first", 10]]);
  },
);

dropPgTestDatabaseAfterwards(db);
