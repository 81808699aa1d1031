/**
 * Fuzzing the WebSocket protocol with fast-check against a real server (DESIGN §3 "a
 * malformed frame gets an error reply, never a dropped connection or a crash"). Generated frames
 * cover every op with random, missing and extra fields (`__proto__`, `constructor`…), wrong
 * types, edge numbers, unusable refs, deep nesting, binary and fragmented frames, sizes around
 * the frame limit, and — with the real lease token of a job the socket holds — calls that reach
 * the store. Each frame must get exactly one `ok` or `error` reply echoing its ref, with a 4xx
 * code; only a frame over the limit (1009) or a failed `auth` (1008) may close the socket. A
 * second property writes broken WebSocket framing on fresh sockets. Throughout, the rows of a
 * seeded job in every state stay byte-identical, and the server stays healthy.
 *
 * Deterministic: fixed seeds, bounded runs; `FUZZ_RUNS` and `FUZZ_SEED` as in fuzz_http_test.ts.
 */

import fc from "fast-check";
import assert from "node:assert/strict";
import {
  assertHealthy,
  brokenText,
  deepText,
  fuzzParams,
  JOB_OPTIONS,
  jsonText,
  keyArb,
  mutated,
  numberLiteral,
  seedJobs,
  SeedSnapshot,
  startFuzzServer,
  stringLiteral,
  Tally,
} from "../helpers/fuzz.ts";
import { MAX_AUTH_FRAME_BYTES } from "../../lib/core/limits.ts";
import { maskedFrame, OPCODE, RawWs } from "../helpers/raw_ws.ts";
import type { TestServer } from "../helpers/test_server.ts";
import { wsUrl } from "../helpers/ws_client.ts";

const MAX_FRAME = 32 * 1024;
const MAX_PAYLOAD = 4 * 1024;
const LIMITS = { maxBody: MAX_FRAME, maxPayload: MAX_PAYLOAD, maxBatch: 10 };

const ADMIN_FZ = "ws-fz-admin-token-0123456789";
const PRODUCER_ALL = "ws-producer-token-0123456789";
const CONSUMER_FZC = "ws-consumer-token-0123456789";
const TOKENS = [
  { name: "fz-admin", token: ADMIN_FZ, scopes: ["admin"], queues: ["fz*"] },
  { name: "producer", token: PRODUCER_ALL, scopes: ["produce"] },
  { name: "fz-consumer", token: CONSUMER_FZC, scopes: ["consume"], queues: ["fz.c*"] },
];

/** Error codes a frame may be answered with; `internal`, `unavailable` would be server faults. */
const CLIENT_CODES = new Set([
  "invalid_json",
  "validation_failed",
  "unauthorized",
  "forbidden",
  "not_found",
  "lease_lost",
  "payload_too_large",
  "rate_limited",
]);

const LAST_ID = '"\u0001last-id\u0001"';
const LAST_TOKEN = '"\u0001last-token\u0001"';

interface Targets {
  queues: string[];
  ids: number[];
  tokens: string[];
  authTokens: string[];
}

/** One generated frame. */
interface FuzzFrame {
  kind: "text" | "binary" | "fragmented" | "bytes";
  text: string;
  bytes?: Uint8Array<ArrayBuffer>;
}

const OPS = [
  "auth",
  "subscribe",
  "unsubscribe",
  "ack",
  "nack",
  "extend",
  "checkpoint",
  "enqueue",
  "flow",
  "add_nodes",
  "watch",
  "unwatch",
];

/** Each op's fields: required, then optional. */
const OP_FIELDS: Record<string, [string[], string[]]> = {
  auth: [["token"], []],
  subscribe: [["queue"], ["prefetch", "lease_ms"]],
  unsubscribe: [["queue"], []],
  ack: [["id", "token"], ["result"]],
  nack: [["id", "token"], ["error", "delay_ms", "dead"]],
  extend: [["id", "token"], ["lease_ms"]],
  checkpoint: [["id", "token", "data"], []],
  enqueue: [["queue", "payload"], [...JOB_OPTIONS]],
  flow: [["nodes"], ["key"]],
  add_nodes: [["id", "token", "nodes"], []],
  watch: [["id"], []],
  unwatch: [["id"], []],
};

/** Flow nodes: a few refs, edges among them (cycles, self edges and unknown refs included). */
function flowNodes(queues: readonly string[]): fc.Arbitrary<string> {
  const refs = ["a", "b", "c", "d"];
  return fc.array(
    fc.record({
      ref: fc.constantFrom(...refs),
      queue: fc.constantFrom(...queues),
      deps: fc.subarray([...refs, "zz"]),
      rule: fc.constantFrom("cancel", "ignore", "run", "later"),
    }),
    { maxLength: 4 },
  ).map((nodes) =>
    JSON.stringify(nodes.map((n) => ({
      ref: n.ref,
      queue: n.queue,
      payload: {},
      depends_on: n.deps.map((ref) => ({ ref, on_failure: n.rule })),
    })))
  );
}

function fieldValues(op: string, targets: Targets): (field: string) => fc.Arbitrary<string> {
  const int = (min: number, max: number) => fc.integer({ min, max }).map(String);
  const json = jsonText.filter((t) => {
    try {
      JSON.parse(t);
      return true;
    } catch {
      return false;
    }
  });
  const good = (field: string): fc.Arbitrary<string> => {
    switch (field) {
      case "queue":
        return fc.constantFrom(...targets.queues).map((q) => JSON.stringify(q));
      case "id":
        return fc.oneof(
          { weight: 3, arbitrary: fc.constant(LAST_ID) },
          { weight: 1, arbitrary: fc.constantFrom(...targets.ids).map(String) },
        );
      case "token":
        if (op === "auth") {
          return fc.constantFrom(...targets.authTokens).map((t) => JSON.stringify(t));
        }
        return fc.oneof(
          { weight: 3, arbitrary: fc.constant(LAST_TOKEN) },
          {
            weight: 1,
            arbitrary: fc.constantFrom(...targets.tokens).map((t) => JSON.stringify(t)),
          },
        );
      case "prefetch":
        return int(1, 1000);
      case "lease_ms":
        return int(100, 43_200_000);
      case "delay_ms":
        return int(0, 1_000_000);
      case "run_at":
        return int(0, 2 ** 42);
      case "max_attempts":
        return int(1, 1000);
      case "priority":
        return int(-(2 ** 31), 2 ** 31 - 1);
      case "key":
        return fc.string({ minLength: 1, maxLength: 10 }).map((k) => JSON.stringify(k));
      case "backoff":
        return fc.tuple(fc.integer({ min: 1, max: 1000 }), fc.nat(1000))
          .map(([base, more]) => `{"base_ms":${base},"max_ms":${base + more}}`);
      case "error":
        return fc.string({ maxLength: 20 }).map((e) => JSON.stringify(e));
      case "dead":
        return fc.boolean().map(String);
      case "nodes":
        return flowNodes(targets.queues);
      default:
        return json;
    }
  };
  const edge = (field: string): fc.Arbitrary<string> => {
    switch (field) {
      case "queue":
        return fc.oneof(
          stringLiteral,
          fc.constantFrom(
            '"constructor"',
            '"__proto__"',
            `"fz.${"q".repeat(125)}"`,
            `"${"q".repeat(129)}"`,
          ),
          jsonText,
        );
      case "id":
        return fc.oneof(numberLiteral, fc.constantFrom('"1"', "[1]", "null"), jsonText);
      case "token":
        return fc.oneof(stringLiteral, fc.constant(JSON.stringify("t".repeat(257))), jsonText);
      case "payload":
      case "data":
      case "result":
        return fc.oneof(
          jsonText,
          fc.integer({ min: MAX_PAYLOAD - 3, max: MAX_PAYLOAD + 1 }).map((n) =>
            JSON.stringify("p".repeat(n - 2))
          ),
        );
      default:
        return fc.oneof(numberLiteral, jsonText);
    }
  };
  return (field) =>
    fc.oneof({ weight: 8, arbitrary: good(field) }, { weight: 1, arbitrary: edge(field) });
}

const refText = fc.oneof(
  { weight: 4, arbitrary: fc.nat().map(String) },
  { weight: 2, arbitrary: fc.string({ maxLength: 12 }).map((r) => JSON.stringify(r)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      JSON.stringify("r".repeat(256)),
      JSON.stringify("r".repeat(257)),
      "1.5",
      "-0",
      "1e308",
      "1e999",
      "null",
      "true",
      "{}",
      "[1]",
    ),
  },
);

/** A frame for `op`: its fields mostly valid, maybe a ref, maybe extra or repeated keys. */
function opFrame(op: string, targets: Targets): fc.Arbitrary<string> {
  const [required, optional] = OP_FIELDS[op];
  const value = fieldValues(op, targets);
  const entries = (fields: string[]): fc.Arbitrary<string[]> =>
    fields.length === 0
      ? fc.constant([])
      : fc.tuple(...fields.map((f) => value(f).map((v) => `${JSON.stringify(f)}:${v}`)));
  const batch = op === "enqueue"
    ? fc.array(
      fc.tuple(entries(["payload"]), fc.subarray(optional).chain(entries))
        .map(([a, b]) => `{${[...a, ...b].join(",")}}`),
      { minLength: 0, maxLength: 12 },
    ).map((jobs) => [`"jobs":[${jobs.join(",")}]`])
    : fc.constant(null);
  return fc.record({
    opText: fc.oneof(
      { weight: 12, arbitrary: fc.constant(JSON.stringify(op)) },
      {
        weight: 1,
        arbitrary: fc.oneof(stringLiteral, numberLiteral, fc.constantFrom("null", "[]")),
      },
    ),
    ref: fc.option(refText, { freq: 3 }),
    required: entries(required),
    optional: fc.subarray(optional).chain(entries),
    batch: fc.option(batch, { freq: 4 }),
    extra: fc.array(
      fc.tuple(keyArb, fc.oneof(numberLiteral, stringLiteral, jsonText)),
      { maxLength: 2 },
    ).map((xs) => xs.map(([k, v]) => `${JSON.stringify(k)}:${v}`)),
    dropOp: fc.boolean(),
    extraWeight: fc.nat(5),
  }).map(({ opText, ref, required, optional, batch, extra, dropOp, extraWeight }) => {
    const parts: string[] = [];
    if (!(dropOp && extraWeight === 0)) parts.push(`"op":${opText}`);
    if (ref !== null) parts.push(`"ref":${ref}`);
    if (batch !== null && batch !== undefined && op === "enqueue") {
      parts.push(...required.filter((e) => e.startsWith('"queue"')), ...(batch ?? []));
    } else parts.push(...required, ...optional);
    if (extraWeight < 2) parts.push(...extra);
    return `{${parts.join(",")}}`;
  });
}

function frameArb(targets: Targets): fc.Arbitrary<FuzzFrame> {
  const valid = fc.constantFrom(...OPS).chain((op) => opFrame(op, targets));
  const text = fc.oneof(
    { weight: 12, arbitrary: valid },
    { weight: 2, arbitrary: mutated(valid) },
    { weight: 1, arbitrary: jsonText },
    { weight: 1, arbitrary: brokenText },
    { weight: 1, arbitrary: deepText },
    {
      weight: 1,
      arbitrary: fc.integer({ min: MAX_FRAME - 1, max: MAX_FRAME + 1 }).map((n) => {
        const head = '{"op":"enqueue","queue":"fz","payload":""}';
        return head.replace('""', JSON.stringify("x".repeat(n - head.length)));
      }),
    },
  );
  return fc.oneof(
    { weight: 12, arbitrary: text.map((t): FuzzFrame => ({ kind: "text", text: t })) },
    { weight: 2, arbitrary: text.map((t): FuzzFrame => ({ kind: "binary", text: t })) },
    { weight: 1, arbitrary: text.map((t): FuzzFrame => ({ kind: "fragmented", text: t })) },
    {
      weight: 1,
      arbitrary: fc.uint8Array({ maxLength: 40 }).map((b): FuzzFrame => ({
        kind: "bytes",
        text: "",
        bytes: new Uint8Array(b),
      })),
    },
  );
}

// ---- the socket under test ----

/** A fuzzed socket that tracks the last job pushed to it and reconnects when closed. */
class FuzzSocket {
  #ws: RawWs | null = null;
  last: { id: number; token: string } | null = null;
  readonly #url: string;
  readonly #headers: Record<string, string>;
  reconnects = 0;

  constructor(url: string, headers: Record<string, string>) {
    this.#url = url;
    this.#headers = headers;
  }

  async socket(): Promise<RawWs> {
    this.#ws ??= await RawWs.connect(this.#url, { headers: this.#headers });
    return this.#ws;
  }

  async dropped(): Promise<void> {
    await this.#ws?.[Symbol.asyncDispose]();
    this.#ws = null;
    this.reconnects++;
  }

  /**
   * Reads frames until the reply to the frame just sent: answers it, or the close code when
   * the server closed instead. Job pushes are noted (their id and token feed later frames).
   */
  async reply(
    timeoutMs = 3000,
  ): Promise<{ reply?: Record<string, unknown>; close?: number | null }> {
    const ws = await this.socket();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const frame = await ws.readFrame(Math.max(1, deadline - Date.now()));
      if (frame === null) return { close: null };
      if (frame.opcode === OPCODE.close) {
        return {
          close: frame.payload.length >= 2 ? (frame.payload[0] << 8) | frame.payload[1] : 1005,
        };
      }
      if (frame.opcode === OPCODE.ping) {
        await ws.pong(frame.payload);
        continue;
      }
      if (frame.opcode !== OPCODE.text) continue;
      const value = JSON.parse(new TextDecoder().decode(frame.payload));
      if (value.op === "job") this.last = { id: value.id, token: value.lease.token };
      if (value.op === "ok" || value.op === "error") return { reply: value };
    }
  }

  async close(): Promise<void> {
    await this.#ws?.[Symbol.asyncDispose]();
    this.#ws = null;
  }
}

/** Sends a frame as generated (placeholders filled in); answers the bytes sent. */
async function sendFrame(
  socket: FuzzSocket,
  frame: FuzzFrame,
): Promise<{ text: string; size: number }> {
  const ws = await socket.socket();
  const encoder = new TextEncoder();
  if (frame.kind === "bytes") {
    await ws.sendFrame(OPCODE.binary, frame.bytes!);
    return { text: "", size: frame.bytes!.length };
  }
  const text = frame.text
    .replaceAll(LAST_ID, String(socket.last?.id ?? 999_999))
    .replaceAll(LAST_TOKEN, JSON.stringify(socket.last?.token ?? "no-job-held-yet"));
  const bytes = encoder.encode(text);
  if (frame.kind === "text") await ws.sendFrame(OPCODE.text, bytes);
  else if (frame.kind === "binary") await ws.sendFrame(OPCODE.binary, bytes);
  else {
    // Both fragments in one write: two small writes would wait on Nagle and delayed ACKs.
    const cut = Math.floor(bytes.length / 2);
    const first = maskedFrame(OPCODE.text, bytes.subarray(0, cut), false);
    const rest = maskedFrame(OPCODE.continuation, bytes.subarray(cut), true);
    const both = new Uint8Array(first.length + rest.length);
    both.set(first);
    both.set(rest, first.length);
    await ws.writeRaw(both);
  }
  return { text, size: bytes.length };
}

function refOf(text: string): unknown {
  try {
    const value = JSON.parse(text);
    if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
    const ref = value.ref;
    if (typeof ref === "number" && Number.isFinite(ref)) return ref;
    if (typeof ref === "string" && ref.length <= 256) return ref;
  } catch {
    // not JSON
  }
  return undefined;
}

/** Sends one frame and checks the answer; answers what happened, for the tally. */
async function exchange(socket: FuzzSocket, frame: FuzzFrame): Promise<string> {
  const { text, size } = await sendFrame(socket, frame);
  const label = `${frame.kind} ${JSON.stringify(text.slice(0, 200))} (${size} bytes)`;
  const { reply, close } = await socket.reply();
  if (Deno.env.has("FUZZ_DEBUG")) console.log(label, "→", JSON.stringify(reply ?? { close }));
  if (reply === undefined) {
    if (size > MAX_FRAME) {
      assert.equal(close, 1009, `${label}: closed with ${close}, expected 1009`);
      await socket.dropped();
      return "close 1009";
    }
    assert.fail(`${label}: the server closed the socket (${close}) instead of answering`);
  }
  assert.ok(size <= MAX_FRAME, `${label}: a frame over the limit was answered`);
  const ref = refOf(text);
  // `===`, not Object.is: a ref of -0 comes back as 0, JSON having one zero.
  if (ref !== undefined) assert.ok(reply.ref === ref, `${label}: ref ${reply.ref}, not ${ref}`);
  if (reply.op === "ok") return "ok";
  assert.ok(CLIENT_CODES.has(reply.code as string), `${label} → ${JSON.stringify(reply)}`);
  assert.equal(typeof reply.message, "string");
  if (reply.code === "unauthorized") {
    // A failed auth frame ends the session (protocol.md): the socket must close with 1008.
    const after = await socket.reply();
    assert.equal(after.close, 1008, `${label}: after unauthorized`);
    await socket.dropped();
    return "unauthorized, close 1008";
  }
  return reply.code as string;
}

// ---- servers ----

/** A socket that must keep working while others misbehave. */
async function witnessWorks(server: TestServer, headers: Record<string, string>): Promise<void> {
  await using ws = await RawWs.connect(wsUrl(server.url), { headers });
  await ws.send({ op: "unsubscribe", ref: "witness", queue: "fz.none" });
  const reply = await ws.next((f) => f.ref === "witness");
  assert.deepEqual(reply, { op: "ok", ref: "witness", queue: "fz.none" });
}

/** A full consume cycle over a fresh socket: the protocol still works end to end. */
async function roundTrip(server: TestServer, headers: Record<string, string>): Promise<void> {
  await using ws = await RawWs.connect(wsUrl(server.url), { headers });
  const queue = `fz.after.${crypto.randomUUID().slice(0, 8)}`;
  await ws.send({ op: "subscribe", ref: 1, queue, prefetch: 1 });
  assert.equal((await ws.next((f) => f.ref === 1)).op, "ok");
  await ws.send({ op: "enqueue", ref: 2, queue, payload: { n: 1 } });
  const job = await ws.next((f) => f.op === "job");
  assert.deepEqual(job.payload, { n: 1 });
  await ws.send({ op: "ack", ref: 3, id: job.id, token: job.lease.token });
  const ack = await ws.next((f) => f.ref === 3);
  assert.deepEqual([ack.op, ack.state], ["ok", "done"]);
}

async function connectionsOpen(server: TestServer, headers: HeadersInit): Promise<number> {
  const metrics = await server.request("GET", "/metrics", undefined, headers);
  return Number(/^tegami_websocket_connections (\d+)$/m.exec(metrics.body)?.[1] ?? "-1");
}

// ---- properties ----

Deno.test("fuzzed frames with auth on each get one 4xx-coded reply and never touch another queue", async () => {
  await using server = await startFuzzServer(LIMITS, TOKENS);
  const headers = { Authorization: `Bearer ${ADMIN_FZ}` };
  const socket = new FuzzSocket(wsUrl(server.url), headers);
  try {
    const seed = await seedJobs(server);
    using snapshot = new SeedSnapshot(server.dbPath, seed.ids);
    const before = snapshot.read();
    const targets: Targets = {
      queues: ["fz", "fz", "fz.c", "seed", "other"],
      ids: [...seed.ids, 999_999],
      tokens: [seed.leaseToken, "AAAAAAAAAAAAAAAAAAAAAA"],
      authTokens: [
        ADMIN_FZ,
        ADMIN_FZ,
        ADMIN_FZ,
        PRODUCER_ALL,
        CONSUMER_FZC,
        "not-a-token-0123456789",
      ],
    };
    const tally = new Tally();
    await fc.assert(
      fc.asyncProperty(frameArb(targets), async (frame) => {
        tally.add(await exchange(socket, frame));
        assert.equal(snapshot.read(), before, "a seeded job's stored row changed");
      }),
      fuzzParams(1000, 0x1d4e55),
    );
    tally.report("WebSocket fuzz, auth on");
    tally.assertSaw(
      [
        "ok",
        "invalid_json",
        "validation_failed",
        "forbidden",
        "not_found",
        "lease_lost",
        "payload_too_large",
        "close 1009",
        "unauthorized, close 1008",
      ],
      "WebSocket fuzz, auth on",
    );
    await socket.close();
    await witnessWorks(server, headers);
    await roundTrip(server, headers);
    await assertHealthy(server, { authorization: `Bearer ${ADMIN_FZ}` });
    assert.equal(snapshot.read(), before);
  } finally {
    await socket.close();
  }
});

Deno.test("fuzzed frames with auth off each get one 4xx-coded reply and leave stored jobs intact", async () => {
  await using server = await startFuzzServer(LIMITS, null);
  const socket = new FuzzSocket(wsUrl(server.url), {});
  try {
    const seed = await seedJobs(server);
    using snapshot = new SeedSnapshot(server.dbPath, seed.ids);
    const before = snapshot.read();
    const targets: Targets = {
      queues: ["fz", "fz.a", "other"],
      ids: [999_999],
      tokens: ["AAAAAAAAAAAAAAAAAAAAAA"],
      authTokens: ["anything-0123456789abcdef"],
    };
    const tally = new Tally();
    await fc.assert(
      fc.asyncProperty(frameArb(targets), async (frame) => {
        // With auth off a subscription to the seed queue would lease its pending job: valid.
        fc.pre(!frame.text.includes("seed"));
        tally.add(await exchange(socket, frame));
        assert.equal(snapshot.read(), before, "a seeded job's stored row changed");
      }),
      fuzzParams(1000, 0x6a0b13),
    );
    tally.report("WebSocket fuzz, auth off");
    tally.assertSaw(
      [
        "ok",
        "invalid_json",
        "validation_failed",
        "not_found",
        "lease_lost",
        "payload_too_large",
        "close 1009",
      ],
      "WebSocket fuzz, auth off",
    );
    await socket.close();
    await witnessWorks(server, {});
    await roundTrip(server, {});
    await assertHealthy(server);
    assert.equal(snapshot.read(), before);
  } finally {
    await socket.close();
  }
});

Deno.test("fuzzed frames before auth get unauthorized and close 1008, unless a valid auth", async () => {
  await using server = await startFuzzServer(LIMITS, TOKENS);
  const seed = await seedJobs(server);
  using snapshot = new SeedSnapshot(server.dbPath, seed.ids);
  const before = snapshot.read();
  const targets: Targets = {
    queues: ["fz", "seed"],
    ids: seed.ids,
    tokens: [seed.leaseToken],
    authTokens: [ADMIN_FZ, "not-a-token-0123456789", `${ADMIN_FZ} `, ADMIN_FZ.toUpperCase()],
  };
  const tally = new Tally();
  await fc.assert(
    fc.asyncProperty(frameArb(targets), async (frame) => {
      const socket = new FuzzSocket(wsUrl(server.url), {});
      try {
        const { text, size } = await sendFrame(socket, frame);
        const label = `${frame.kind} ${JSON.stringify(text.slice(0, 200))}`;
        const { reply, close } = await socket.reply();
        if (size > MAX_AUTH_FRAME_BYTES) {
          // Refused from its head before auth, however large: told as any frame before auth.
          assert.equal(reply?.code, "unauthorized", `${label}: closed (${close})`);
          assert.equal((await socket.reply()).close, 1008, `${label}: close code`);
          tally.add("unauthorized over 4 KiB, close 1008");
          return;
        }
        assert.ok(reply !== undefined, `${label}: closed (${close}) without a reply`);
        const parsed = (() => {
          try {
            return JSON.parse(text);
          } catch {
            return null;
          }
        })();
        const goodAuth = parsed?.op === "auth" && parsed?.token === ADMIN_FZ &&
          Object.keys(parsed).every((k) => ["op", "ref", "token"].includes(k)) &&
          (parsed.ref === undefined || refOf(text) !== undefined);
        if (goodAuth) {
          assert.equal(reply.op, "ok", `${label} → ${JSON.stringify(reply)}`);
          tally.add("authenticated");
          return;
        }
        assert.equal(reply.op, "error", `${label} → ${JSON.stringify(reply)}`);
        if (parsed?.op === "auth" && reply.code === "validation_failed") {
          // An auth frame of the wrong shape is told what is wrong, and still ends the
          // unauthenticated socket.
          assert.equal((await socket.reply()).close, 1008, `${label}: close code`);
          tally.add("malformed auth, close 1008");
          return;
        }
        assert.equal(reply.code, "unauthorized", `${label} → ${JSON.stringify(reply)}`);
        assert.equal((await socket.reply()).close, 1008, `${label}: close code`);
        tally.add("unauthorized, close 1008");
      } finally {
        await socket.close();
      }
    }),
    fuzzParams(300, 0x0a7417),
  );
  tally.report("WebSocket fuzz before auth");
  tally.assertSaw(
    [
      "authenticated",
      "unauthorized, close 1008",
      "malformed auth, close 1008",
      "unauthorized over 4 KiB, close 1008",
    ],
    "before auth",
  );
  assert.equal(snapshot.read(), before);
  await witnessWorks(server, { Authorization: `Bearer ${ADMIN_FZ}` });
});

// ---- broken framing ----

/** A WebSocket frame with random header bits, length encoding, mask and payload. */
const brokenFrame: fc.Arbitrary<Uint8Array<ArrayBuffer>> = fc.record({
  first: fc.oneof(
    fc.integer({ min: 0, max: 255 }),
    fc.constantFrom(0x81, 0x82, 0x01, 0x80, 0x88, 0x89, 0x8a, 0x83, 0x8b, 0xc1, 0x91),
  ),
  masked: fc.boolean(),
  lengthForm: fc.constantFrom("short", "16", "64", "64huge", "lie"),
  payload: fc.uint8Array({ maxLength: 200 }),
}).map(({ first, masked, lengthForm, payload }) => {
  const head: number[] = [first];
  const n = payload.length;
  const maskBit = masked ? 0x80 : 0;
  if (lengthForm === "short" && n < 126) head.push(maskBit | n);
  else if (lengthForm === "16" || (lengthForm === "short" && n >= 126)) {
    head.push(maskBit | 126, n >> 8, n & 0xff);
  } else if (lengthForm === "64") head.push(maskBit | 127, 0, 0, 0, 0, 0, 0, n >> 8, n & 0xff);
  else if (lengthForm === "64huge") {
    head.push(maskBit | 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
  } else head.push(maskBit | Math.min(125, n + 50)); // announces more than it sends
  if (masked) head.push(1, 2, 3, 4);
  const out = new Uint8Array(head.length + n);
  out.set(head);
  out.set(payload, head.length);
  return out;
});

Deno.test("fuzzed broken WebSocket framing never harms the server or other sockets", async () => {
  await using server = await startFuzzServer(LIMITS, null);
  const seed = await seedJobs(server);
  using snapshot = new SeedSnapshot(server.dbPath, seed.ids);
  const before = snapshot.read();
  await using witness = await RawWs.connect(wsUrl(server.url));
  let n = 0;
  const tally = new Tally();
  await fc.assert(
    fc.asyncProperty(fc.array(brokenFrame, { minLength: 1, maxLength: 4 }), async (frames) => {
      await using ws = await RawWs.connect(wsUrl(server.url));
      for (const frame of frames) {
        try {
          await ws.writeRaw(frame);
        } catch {
          break; // the server already closed on an earlier frame
        }
      }
      // Whatever it answers (an error, a close frame, a dropped connection), it is no reply
      // to judge: the point is that nothing else is affected.
      const first = await ws.readFrame(20).catch(() => null);
      tally.add(first === null ? "nothing or closed" : `opcode ${first.opcode}`);
      const ref = `w${n++}`;
      await witness.send({ op: "unsubscribe", ref, queue: "fz.none" });
      assert.equal((await witness.next((f) => f.ref === ref)).op, "ok", "the witness socket");
      assert.equal(snapshot.read(), before, "a seeded job's stored row changed");
    }),
    fuzzParams(200, 0x5f00d1),
  );
  tally.report("broken WebSocket framing");
  await roundTrip(server, {});
  await assertHealthy(server);
  // Every broken socket is gone: only the witness is left.
  let open = -1;
  for (let i = 0; i < 200 && open !== 1; i++) {
    open = await connectionsOpen(server, {});
    if (open !== 1) await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(open, 1, "connections left open after the broken sockets went away");
});
