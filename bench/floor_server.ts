/**
 * The runtime floor: a server that speaks the part of tegami's protocol the bench drives —
 * `POST /v1/queues/{queue}/jobs` (one job or `{jobs: […]}`), and on `GET /v1/ws` the
 * `subscribe`, `ack` and `enqueue` frames with credit-based push, and on a `tegami.v2` socket
 * (the client library's) `jobs` pushes and `batch` frames — and does nothing else: jobs
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
  /** Protocol v2: every job dealt at once goes in one `jobs` frame. */
  v2: boolean;
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

/** One delivery's members, as tegami's `job` frame carries them (without `op`). */
function delivery(name: string, job: Waiting): string {
  return `"queue":${JSON.stringify(name)},"id":${job.id},"payload":${job.payload},` +
    `"attempt":1,"lease":{"token":"floor-${job.id}","expires_at":0}`;
}

/** Pushes waiting jobs to subscribers with credit, round-robin. */
function dispatch(name: string): void {
  const queue = queueOf(name);
  const subs = queue.subscribers;
  const dealt = new Map<Subscriber, string[]>();
  while (queue.head < queue.jobs.length && subs.some((s) => s.credit > 0)) {
    const sub = subs[queue.next++ % subs.length];
    if (sub.credit === 0) continue;
    const job = queue.jobs[queue.head++];
    sub.credit--;
    if (!sub.v2) {
      sub.socket.send(`{"op":"job",${delivery(name, job)}}`);
      continue;
    }
    const list = dealt.get(sub);
    if (list === undefined) dealt.set(sub, [`{${delivery(name, job)}}`]);
    else list.push(`{${delivery(name, job)}}`);
  }
  for (const [sub, jobs] of dealt) {
    sub.socket.send(`{"op":"jobs","queue":${JSON.stringify(name)},"jobs":[${jobs.join(",")}]}`);
  }
  if (queue.head > 1024 && queue.head * 2 > queue.jobs.length) {
    queue.jobs = queue.jobs.slice(queue.head);
    queue.head = 0;
  }
}

/** A client frame of the kinds the bench sends. */
interface Frame {
  op: string;
  ref?: unknown;
  queue?: string;
  prefetch?: number;
  id?: number;
  payload?: unknown;
  frames?: Frame[];
}

function socketFor(request: Request): Response {
  const offered = request.headers.get("sec-websocket-protocol")?.split(",").map((p) => p.trim());
  const v2 = offered?.includes("tegami.v2") ?? false;
  const { socket, response } = Deno.upgradeWebSocket(
    request,
    v2 ? { protocol: "tegami.v2" } : {},
  );
  const subscriptions: [string, Subscriber][] = [];
  /** Queues to dispatch once the frame in hand is answered. */
  const touched = new Set<string>();
  /** Handles one frame; returns its reply. */
  const handle = (frame: Frame): string => {
    const ref = JSON.stringify(frame.ref ?? null);
    switch (frame.op) {
      case "subscribe": {
        const sub = { socket, credit: frame.prefetch!, v2 };
        queueOf(frame.queue!).subscribers.push(sub);
        subscriptions.push([frame.queue!, sub]);
        touched.add(frame.queue!);
        return JSON.stringify({ op: "ok", ref: frame.ref, queue: frame.queue });
      }
      case "ack":
        for (const [name, sub] of subscriptions) {
          sub.credit++;
          touched.add(name);
        }
        return `{"op":"ok","ref":${ref},"id":${frame.id},"state":"done"}`;
      case "enqueue": {
        const id = enqueue(frame.queue!, frame.payload);
        touched.add(frame.queue!);
        return `{"op":"ok","ref":${ref},"id":${id},"deduplicated":false,"duplicate":null}`;
      }
      case "batch":
        return `{"op":"ok","ref":${ref},"replies":[${frame.frames!.map(handle).join(",")}]}`;
      default:
        return `{"op":"error","ref":${ref},"code":"validation_failed","message":"not in the floor"}`;
    }
  };
  socket.onmessage = (event) => {
    socket.send(handle(JSON.parse(event.data as string)));
    for (const name of touched) dispatch(name);
    touched.clear();
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
      const jobs = ids.map((id: number) => ({ id, deduplicated: false, duplicate: null }));
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
