/**
 * HTTP/1.1 from the RFCs, as exact bytes on a socket, on every path a request can take: a fresh
 * connection to the front door (its own parser, which leaves to the relay what it declines), a
 * connection the front door relays to its private `Deno.serve` (a HEAD first makes it one), and
 * `--front-door off` (`Deno.serve` alone). Each step names its clause; every answer must carry
 * `Date` (RFC 9110 §6.6.1).
 */

import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";
import { exchange, type RawAnswer, splitAnswers } from "../helpers/raw_http.ts";

type Path = "own parser" | "relay" | "front door off";
const PATHS: Path[] = ["own parser", "relay", "front door off"];

/** What a relayed connection starts with: a HEAD, which the front door always relays. */
const PRIME = "HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

/** A job for queue `queue`, as a whole request with `host` and any `extra` fields. */
function enqueue(queue: string, host: string | null, extra = "", target?: string): string {
  const body = '{"payload":1}';
  return `POST ${target ?? `/v1/queues/${queue}/jobs`} HTTP/1.1\r\n` +
    (host === null ? "" : `Host: ${host}\r\n`) +
    `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n${extra}\r\n${body}`;
}

/** The request a smuggling attempt hides: a job for queue `smuggled`. */
const SMUGGLED = enqueue("smuggled", "127.0.0.1");

interface Wire {
  server: TestServer;
  port: number;
  /** Sends `bytes` on the path and answers what came back to them (not to the priming HEAD). */
  send(bytes: string): Promise<RawAnswer[]>;
  /** Jobs stored in `queue`. */
  stored(queue: string): Promise<number>;
}

async function wireOn(path: Path): Promise<Wire & AsyncDisposable> {
  const server = await startTestServer({
    realTime: true,
    config: { frontDoor: path === "front door off" ? "off" : "on" },
  });
  const port = server.server.port;
  const relay = path === "relay";
  return {
    server,
    port,
    async send(bytes) {
      const text = await exchange(port, (relay ? PRIME : "") + bytes);
      const answers = splitAnswers(text, relay ? 1 : 0);
      for (const answer of answers) {
        assert.ok(answer.headers.has("date"), `RFC 9110 §6.6.1: Date on ${answer.status}`);
      }
      if (!relay) return answers;
      assert.equal(answers[0]?.status, 200, "the priming HEAD");
      return answers.slice(1);
    },
    async stored(queue) {
      let total = 0;
      for (const state of ["pending", "leased", "delayed"]) {
        const page = await server.request("GET", `/v1/queues/${queue}/jobs?state=${state}`);
        total += page.body.jobs.length;
      }
      return total;
    },
    [Symbol.asyncDispose]: () => server[Symbol.asyncDispose](),
  };
}

/** The statuses of `answers`. */
const statuses = (answers: RawAnswer[]) => answers.map((a) => a.status);

/** The code of an answer's error body (hyper's own refusals have none). */
function codeOf(answer: RawAnswer): string | null {
  try {
    return JSON.parse(answer.body).error.code;
  } catch {
    return null;
  }
}

type Case = [name: string, run: (wire: Wire, path: Path) => Promise<void>];

const CASES: Case[] = [
  [
    "RFC 9112 §3.2: a request without Host is 400, and an enqueue without Host stores nothing",
    async (w) => {
      assert.deepEqual(statuses(await w.send("GET /healthz HTTP/1.1\r\n\r\n")), [400]);
      const answers = await w.send(enqueue("nohost", null));
      assert.deepEqual(statuses(answers), [400]);
      assert.equal(codeOf(answers[0]), "validation_failed");
      assert.equal(await w.stored("nohost"), 0);
    },
  ],
  ["RFC 9112 §3.2: a Host that carries a path is 400 and reroutes nothing", async (w) => {
    const host = `127.0.0.1:${w.port}/v1/queues/rerouted/jobs#`;
    const answers = await w.send(enqueue("x", host, "", "/no/such/path"));
    assert.deepEqual(statuses(answers), [400]);
    assert.equal(codeOf(answers[0]), "validation_failed");
    assert.equal(await w.stored("rerouted"), 0);
    const health = await w.send(
      `GET /no/such/path HTTP/1.1\r\nHost: 127.0.0.1:${w.port}/healthz?\r\n\r\n`,
    );
    assert.deepEqual(statuses(health), [400]);
  }],
  ["RFC 9112 §3.2: a Host with userinfo, a path, a query or a fragment is 400", async (w) => {
    for (const host of ["127.0.0.1/x", "user@127.0.0.1", "127.0.0.1:1/healthz#", "h?q", "h#f"]) {
      const answers = await w.send(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      assert.deepEqual(statuses(answers), [400], host);
    }
  }],
  ["RFC 9112 §3.2: two Host fields are 400", async (w) => {
    const answers = await w.send(
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n\r\n",
    );
    assert.deepEqual(statuses(answers), [400]);
  }],
  ["RFC 9112 §3.2.2: an absolute-form target's authority wins over Host", async (w) => {
    const own = await w.send(
      enqueue(
        "absolute",
        "foreign.example",
        "",
        `http://127.0.0.1:${w.port}/v1/queues/absolute/jobs`,
      ),
    );
    assert.deepEqual(statuses(own), [201]);
    assert.equal(await w.stored("absolute"), 1);
    // Without tokens the host rule judges the target's authority, not the Host field.
    const foreign = await w.send(
      enqueue(
        "foreign",
        `127.0.0.1:${w.port}`,
        "",
        "http://foreign.example/v1/queues/foreign/jobs",
      ),
    );
    assert.deepEqual(statuses(foreign), [403]);
    assert.equal(await w.stored("foreign"), 0);
  }],
  ["RFC 9110 §4.2.4: an absolute-form target with userinfo is 400", async (w) => {
    const answers = await w.send(
      `GET http://user@127.0.0.1:${w.port}/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
    );
    assert.deepEqual(statuses(answers), [400]);
  }],
  ["RFC 9112 §3: a request line longer than 8 KiB is 414", async (w) => {
    const answers = await w.send(
      `GET /${"a".repeat(9 * 1024)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
    );
    assert.deepEqual(statuses(answers), [414]);
  }],
  ["RFC 9110 §9.3.2: HEAD answers as GET does, without the body", async (w) => {
    const [get] = await w.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    const head = await w.send("HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    assert.equal(head.length, 1);
    assert.equal(head[0].status, get.status);
    assert.equal(head[0].headers.get("content-type"), get.headers.get("content-type"));
    assert.equal(head[0].headers.get("content-length"), String(get.body.length));
  }],
  ["RFC 6455 §4.2.2: a handshake of version 8 or 14 is 426 naming version 13", async (w) => {
    for (const version of ["8", "14"]) {
      const [answer] = await w.send(
        "GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
          `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: ${version}\r\n\r\n`,
      );
      assert.equal(answer.status, 426, version);
      assert.equal(answer.headers.get("sec-websocket-version"), "13");
    }
  }],
  [
    "RFC 9112 §3.2.2: a WebSocket handshake in absolute form is judged by its target's authority",
    async (w, path) => {
      const handshake = (origin: string) =>
        `GET http://127.0.0.1:${w.port}/v1/ws HTTP/1.1\r\nHost: foreign.example\r\n` +
        "Upgrade: websocket\r\nConnection: Upgrade\r\n" +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
        `Origin: ${origin}\r\n\r\n`;
      const [own] = await w.send(handshake(`http://127.0.0.1:${w.port}`));
      const [foreign] = await w.send(handshake("http://foreign.example"));
      if (path !== "front door off") {
        // The front door's own socket takes only a plain origin-form handshake (400); a foreign
        // Origin is refused before that is looked at.
        assert.deepEqual([own.status, foreign.status], [400, 403]);
        return;
      }
      // The Origin is the server the target names, whatever Host says; a foreign one is refused.
      assert.equal(own.status, 101);
      assert.equal(foreign.status, 403);
    },
  ],
  ["RFC 9112 §9.3.2: pipelined requests are answered in order", async (w) => {
    const answers = await w.send(
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + enqueue("piped", "127.0.0.1") +
        "GET /v1/queues/piped HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert.deepEqual(statuses(answers), [200, 201, 200]);
    assert.equal(JSON.parse(answers[2].body).counts.pending, 1);
  }],
  ["RFC 9112 §2.3: an HTTP/1.0 request is answered, and one without Host is 400", async (w) => {
    const answers = await w.send("GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    assert.deepEqual(statuses(answers), [200]);
    assert.deepEqual(statuses(await w.send("GET /healthz HTTP/1.0\r\n\r\n")), [400]);
  }],
  // ---- the classic smuggling set: a hidden request must never run ----
  [
    "RFC 9112 §6.1: Content-Length with Transfer-Encoding never runs a hidden request",
    async (w) => {
      const body = `0\r\n\r\n${SMUGGLED}`;
      const answers = await w.send(
        "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
          `Content-Length: ${body.length}\r\nTransfer-Encoding: chunked\r\n\r\n${body}`,
      );
      assert.equal(answers.length, 1, JSON.stringify(statuses(answers)));
      assert.equal(await w.stored("smuggled"), 0);
    },
  ],
  [
    "RFC 9112 §6.1: Transfer-Encoding with a short Content-Length reads the chunked body",
    async (w) => {
      const chunk = SMUGGLED.length.toString(16);
      const answers = await w.send(
        "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
          `Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n${chunk}\r\n${SMUGGLED}\r\n0\r\n\r\n`,
      );
      assert.equal(answers.length, 1, JSON.stringify(statuses(answers)));
      assert.equal(await w.stored("smuggled"), 0);
    },
  ],
  ["RFC 9112 §6.3: two different Content-Lengths are 400", async (w) => {
    const answers = await w.send(
      "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
        `Content-Length: 0\r\nContent-Length: ${SMUGGLED.length}\r\n\r\n${SMUGGLED}`,
    );
    assert.deepEqual(statuses(answers), [400]);
    assert.equal(await w.stored("smuggled"), 0);
  }],
  ["RFC 9112 §6.3: a malformed Content-Length is 400", async (w) => {
    for (const length of ["+13", "0x0d", "1 3", "-1", "13a"]) {
      const answers = await w.send(
        "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
          `Content-Length: ${length}\r\n\r\n{"payload":1}${SMUGGLED}`,
      );
      assert.deepEqual(statuses(answers), [400], length);
    }
    assert.equal(await w.stored("smuggled"), 0);
  }],
  ["RFC 9112 §7.1: a bad or overflowing chunk size is 400", async (w) => {
    for (const size of ["zz", "ffffffffffffffffff1", "-1", "0x1"]) {
      const answers = await w.send(
        "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
          `Transfer-Encoding: chunked\r\n\r\n${size}\r\n{"payload":1}\r\n0\r\n\r\n${SMUGGLED}`,
      );
      assert.ok(answers.length <= 1 && answers.every((a) => a.status === 400), size);
    }
    assert.equal(await w.stored("smuggled"), 0);
  }],
  ["RFC 9112 §5.2: obs-fold in a request is 400", async (w) => {
    const answers = await w.send(
      "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
        `Transfer-Encoding:\r\n chunked\r\nContent-Length: ${SMUGGLED.length + 5}\r\n\r\n` +
        `0\r\n\r\n${SMUGGLED}`,
    );
    assert.ok(answers.length <= 1 && answers.every((a) => a.status === 400));
    assert.equal(await w.stored("smuggled"), 0);
  }],
  ["RFC 9112 §5.1: whitespace between a field name and its colon is 400", async (w) => {
    const answers = await w.send(
      "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
        `Transfer-Encoding : chunked\r\nContent-Length: ${SMUGGLED.length + 5}\r\n\r\n` +
        `0\r\n\r\n${SMUGGLED}`,
    );
    assert.deepEqual(statuses(answers), [400]);
    assert.equal(await w.stored("smuggled"), 0);
  }],
  ["RFC 9112 §2.2: a bare CR in the head is 400", async (w) => {
    const answers = await w.send(
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\rContent-Length: 0\r\n\r\n",
    );
    assert.deepEqual(statuses(answers), [400]);
  }],
  ["RFC 9112 §2.2: a head of bare LFs is read as one request, never two", async (w) => {
    const answers = await w.send(
      `GET /healthz HTTP/1.1\nHost: 127.0.0.1\nContent-Length: ${SMUGGLED.length}\n\n${SMUGGLED}`,
    );
    assert.ok(answers.length <= 1, JSON.stringify(statuses(answers)));
    assert.equal(await w.stored("smuggled"), 0);
  }],
  ["RFC 9112 §6.1: HTTP/1.0 with Transfer-Encoding never runs a hidden request", async (w) => {
    const answers = await w.send(
      "POST /v1/queues/q/jobs HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
        `Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n0\r\n\r\n${SMUGGLED}`,
    );
    assert.ok(answers.length <= 1, JSON.stringify(statuses(answers)));
    assert.equal(await w.stored("smuggled"), 0);
  }],
];

for (const path of PATHS) {
  Deno.test(`HTTP/1.1 on the wire, ${path}`, async (t) => {
    await using wire = await wireOn(path);
    for (const [name, run] of CASES) await t.step(name, () => run(wire, path));
  });
}

Deno.test("RFC 9110 §6.6.1: the front door's own 408 carries Date", async () => {
  await using server = await startTestServer({ realTime: true, config: { headerTimeoutMs: 150 } });
  const text = await exchange(server.server.port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", {
    ms: 2000,
    quietMs: 2000,
  });
  const [answer] = splitAnswers(text);
  assert.equal(answer.status, 408);
  assert.ok(answer.headers.has("date"), text);
});

Deno.test("RFC 9110 §6.6.1: the front door's own 503 past the connection limit carries Date", async () => {
  await using server = await startTestServer({ realTime: true, config: { maxConnections: 1 } });
  const port = server.server.port;
  // A long poll keeps the one connection busy, so the next cannot take its place.
  const busy = await Deno.connect({ hostname: "127.0.0.1", port });
  const lease = '{"wait_ms":3000}';
  await busy.write(new TextEncoder().encode(
    "POST /v1/queues/q/leases HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
      `Content-Length: ${lease.length}\r\n\r\n${lease}`,
  ));
  await new Promise((resolve) => setTimeout(resolve, 100));
  const [answer] = splitAnswers(
    await exchange(port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
  );
  busy.close();
  assert.equal(answer.status, 503);
  assert.ok(answer.headers.has("date"));
});
