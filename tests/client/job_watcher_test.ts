/**
 * The client library's watches share their WebSockets: many watches of one client ride one
 * connection (a new one only past the per-connection limit), each ends with its own job, one
 * failing or aborted leaves the others watching, and a connection closes once it watches
 * nothing. Against a real server, counting its WebSockets from /metrics.
 */

import assert from "node:assert/strict";
import { consume, TegamiClient, TegamiError } from "../../lib/client/mod.ts";
import { JobWatcher } from "../../lib/client/job_watcher.ts";
import { startTestServer, type TestServer, within } from "../helpers/test_server.ts";
import { eventually } from "../helpers/ws_client.ts";

/** The server's open WebSockets, as its metrics count them. */
async function webSockets(server: TestServer): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return Number(/^tegami_websocket_connections (\d+)$/m.exec(text)![1]);
}

/** Enqueues `n` jobs to `queue`, payloads `{ n: 0 … }`; answers their ids. */
async function enqueued(client: TegamiClient, queue: string, n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push((await client.enqueue(queue, { n: i })).id);
  return ids;
}

Deno.test("a client's watches share one WebSocket, each ending with its own job", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const ids = await enqueued(client, "shared", 5);
  const watched = ids.map((id) => client.watch(id));
  // The same job watched twice: both watches end with it, on the same connection.
  const twice = client.watch(ids[0]);
  await eventually(async () => await webSockets(server) === 1, "one watch connection");
  const worker = consume<{ n: number }>("shared", (payload) => payload.n * 10, {
    url: server.url,
  });
  try {
    const ends = await Promise.all(watched);
    assert.deepEqual(ends.map((end) => [end.id, end.state, end.result]), [
      [ids[0], "done", 0],
      [ids[1], "done", 10],
      [ids[2], "done", 20],
      [ids[3], "done", 30],
      [ids[4], "done", 40],
    ]);
    assert.equal((await twice).result, 0);
  } finally {
    await worker.close();
  }
  await eventually(async () => await webSockets(server) === 0, "the idle connection closed");
});

Deno.test("a failed or aborted watch leaves the others on its connection watching", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const watcher = new JobWatcher(server.url, undefined);
  const [kept, dropped] = await enqueued(client, "mixed", 2);
  const keeping = watcher.watch(kept);
  const abort = new AbortController();
  const dropping = watcher.watch(dropped, { signal: abort.signal });
  const unknown = watcher.watch(999_999);
  await assert.rejects(unknown, (error: unknown) => {
    assert.ok(error instanceof TegamiError);
    assert.equal(error.code, "not_found");
    return true;
  });
  abort.abort(new Error("not needed"));
  await assert.rejects(dropping, /not needed/);
  assert.equal(watcher.connections, 1);
  const worker = consume("mixed", () => "finished", { url: server.url });
  try {
    const end = await keeping;
    assert.deepEqual([end.id, end.result], [kept, "finished"]);
  } finally {
    await worker.close();
  }
  assert.equal(watcher.connections, 0);
  await eventually(async () => await webSockets(server) === 0, "the idle connection closed");
});

Deno.test("watches past one connection's limit open another", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const watcher = new JobWatcher(server.url, undefined, 2);
  const ids = await enqueued(client, "spread", 5);
  const watched = ids.map((id) => watcher.watch(id));
  assert.equal(watcher.connections, 3);
  await eventually(async () => await webSockets(server) === 3, "three watch connections");
  for (const id of ids) await client.cancel(id);
  const ends = await Promise.all(watched);
  assert.deepEqual(ends.map((end) => end.state), Array(5).fill("cancelled"));
  assert.equal(watcher.connections, 0);
  await eventually(async () => await webSockets(server) === 0, "every connection closed");
});

Deno.test("a watch of a job that has ended answers at once, and closes its connection", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const [id] = await enqueued(client, "over", 1);
  await client.cancel(id);
  const watcher = new JobWatcher(server.url, undefined);
  assert.equal((await watcher.watch(id)).state, "cancelled");
  assert.equal(watcher.connections, 0);
  const aborted = new AbortController();
  aborted.abort(new Error("gave up"));
  await assert.rejects(watcher.watch(id, { signal: aborted.signal }), /gave up/);
  assert.equal(watcher.connections, 0);
});

Deno.test("a watch of a job deleted before its end rejects with not_found; the others go on", async () => {
  await using server = await startTestServer({ config: { retainDoneMs: 4000 } });
  const put = await server.request("PUT", "/v1/queues/old/settings", { retain_pending_ms: 1000 });
  assert.equal(put.status, 200);
  const client = new TegamiClient({ url: server.url });
  const [doomed] = await enqueued(client, "old", 1);
  const [kept] = await enqueued(client, "kept", 1);
  const gone = assert.rejects(
    client.watch(doomed),
    (error) => error instanceof TegamiError && error.code === "not_found",
  );
  const waiting = client.watch(kept);
  await eventually(async () => await webSockets(server) === 1, "one watch connection");
  for (let i = 0; i < 3; i++) await server.advance(1000);
  assert.notEqual(await within(gone, 5000), "timed out", "the watch of a job gone never ended");
  assert.equal(await webSockets(server), 1, "the other watch keeps the connection");
  await client.cancel(kept);
  assert.equal((await waiting).state, "cancelled");
});
