/**
 * The runtime floor: a server that speaks the part of tegami's protocol the bench drives —
 * `POST /v1/queues/{queue}/jobs` (one job or `{jobs: […]}`), and on `GET /v1/ws` the
 * `subscribe`, `ack` and `enqueue` frames with credit-based push — and does nothing else: jobs
 * live in memory, nothing is validated beyond `JSON.parse`, nothing is stored or fsynced, a lease
 * is never tracked. It is not a queue; it is a bench instrument.
 *
 * Run by the bench in the same run as tegami and its peers, with the same driver, it measures
 * what Deno's HTTP and WebSocket stack alone costs for each workload's traffic on this machine:
 * the ceiling of any server written on this runtime, and so the part of a gap to a peer that no
 * change inside tegami can close.
 *
 * Started like tegami (`… serve --port 0 …`, other flags ignored); prints `url=…` on stderr and
 * exits 0 on SIGTERM.
 *
 * @module
 */

import { parseArgs } from "node:util";

interface Subscriber {
  socket: WebSocket;
  credit: number;
}

interface Waiting {
  id: number;
  payload: string;
}

/** A queue: its waiting jobs from `head` on (no `shift()`: that copies the array each time). */
interface Queue {
  jobs: Waiting[];
  head: number;
  subscribers: Subscriber[];
  next: number;
}

const queues = new Map<string, Queue>();
let lastId = 0;

function queueOf(name: string): Queue {
  let queue = queues.get(name);
  if (queue === undefined) {
    queue = { jobs: [], head: 0, subscribers: [], next: 0 };
    queues.set(name, queue);
  }
  return queue;
}

function enqueue(name: string, payload: unknown): number {
  const id = ++lastId;
  queueOf(name).jobs.push({ id, payload: JSON.stringify(payload) });
  return id;
}

/** Pushes waiting jobs to subscribers with credit, round-robin. */
function dispatch(name: string): void {
  const queue = queueOf(name);
  const subs = queue.subscribers;
  while (queue.head < queue.jobs.length && subs.some((s) => s.credit > 0)) {
    const sub = subs[queue.next++ % subs.length];
    if (sub.credit === 0) continue;
    const job = queue.jobs[queue.head++];
    sub.credit--;
    sub.socket.send(
      `{"op":"job","queue":${JSON.stringify(name)},"id":${job.id},"payload":${job.payload},` +
        `"attempt":1,"lease":{"token":"floor-${job.id}","expires_at":0}}`,
    );
  }
  if (queue.head > 1024 && queue.head * 2 > queue.jobs.length) {
    queue.jobs = queue.jobs.slice(queue.head);
    queue.head = 0;
  }
}

function socketFor(request: Request): Response {
  const { socket, response } = Deno.upgradeWebSocket(request);
  const subscriptions: [string, Subscriber][] = [];
  socket.onmessage = (event) => {
    const frame = JSON.parse(event.data as string);
    switch (frame.op) {
      case "subscribe": {
        const sub = { socket, credit: frame.prefetch };
        queueOf(frame.queue).subscribers.push(sub);
        subscriptions.push([frame.queue, sub]);
        socket.send(JSON.stringify({ op: "ok", ref: frame.ref, queue: frame.queue }));
        dispatch(frame.queue);
        return;
      }
      case "ack":
        socket.send(`{"op":"ok","ref":${JSON.stringify(frame.ref)},"id":${frame.id}}`);
        for (const [name, sub] of subscriptions) {
          sub.credit++;
          dispatch(name);
        }
        return;
      case "enqueue": {
        const id = enqueue(frame.queue, frame.payload);
        socket.send(`{"op":"ok","ref":${JSON.stringify(frame.ref)},"id":${id}}`);
        dispatch(frame.queue);
        return;
      }
    }
  };
  socket.onclose = () => {
    for (const [name, sub] of subscriptions) {
      const subs = queueOf(name).subscribers;
      subs.splice(subs.indexOf(sub), 1);
    }
  };
  return response;
}

async function handle(request: Request): Promise<Response> {
  const path = new URL(request.url).pathname.split("/");
  if (path[2] === "ws") return socketFor(request);
  if (request.method === "POST" && path[2] === "queues" && path[4] === "jobs") {
    const name = decodeURIComponent(path[3]);
    const body = JSON.parse(await request.text());
    const headers = { "content-type": "application/json" };
    if (Array.isArray(body.jobs)) {
      const ids = body.jobs.map((job: { payload: unknown }) => enqueue(name, job.payload));
      dispatch(name);
      const jobs = ids.map((id: number) => ({ id, deduplicated: false }));
      return new Response(JSON.stringify({ jobs }), { status: 201, headers });
    }
    const id = enqueue(name, body.payload);
    dispatch(name);
    return new Response(`{"id":${id},"deduplicated":false}`, { status: 201, headers });
  }
  return new Response("not found", { status: 404 });
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args.slice(1),
    options: { port: { type: "string", default: "0" } },
    strict: false,
  });
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: Number(values.port),
    onListen: ({ port }) => console.error(`floor server listening url=http://127.0.0.1:${port}`),
  }, handle);
  Deno.addSignalListener("SIGTERM", () => {
    server.shutdown().then(() => Deno.exit(0));
  });
}
