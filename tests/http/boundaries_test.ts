/**
 * The differential check behind the front door's claim that no request can be read two ways:
 * wherever its own parser (lib/http/http1.ts) says a request ends, `Deno.serve` — which reads
 * every connection the parser leaves, from the byte it left on — says the same. Each message is
 * sent to a bare `Deno.serve` with a marker request after it: the runtime must answer the message
 * as the parser read it (method, path, body length) and then the marker, and the parser must find
 * the marker where the message's body ends (RFC 9112 §6.3: the message body length).
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { parsePlainRequest } from "../../lib/http/http1.ts";
import { exchange, splitAnswers } from "../helpers/raw_http.ts";

const MARKER = "GET /marker HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
const encoder = new TextEncoder();

/** What the parser reads of `message` followed by the marker, or null when it leaves it. */
function ownReading(message: string) {
  const bytes = encoder.encode(message + MARKER);
  const parsed = parsePlainRequest(bytes, 0, bytes.length);
  if (parsed.kind !== "request") return null;
  const { method, target, bodyStart, bodyEnd } = parsed.request;
  const next = parsePlainRequest(bytes, bodyEnd, bytes.length);
  const marker = next.kind === "request" ? next.request.target : null;
  return { method, path: target.split("?")[0], body: bodyEnd - bodyStart, marker };
}

async function withRuntime(fn: (port: number) => Promise<void>): Promise<void> {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = req.body === null ? 0 : (await req.arrayBuffer()).byteLength;
    const path = new URL(req.url).pathname;
    return Response.json({ method: req.method, path, body });
  });
  try {
    await fn(server.addr.port);
  } finally {
    await server.shutdown();
  }
}

/** Checks that the runtime ends `message` where the parser does (when the parser reads it). */
async function agree(port: number, message: string): Promise<boolean> {
  const own = ownReading(message);
  if (own === null) return false;
  assert.equal(
    own.marker,
    "/marker",
    `the parser finds the next request: ${JSON.stringify(message)}`,
  );
  const answers = splitAnswers(await exchange(port, message + MARKER));
  assert.equal(answers.length, 2, `two answers to ${JSON.stringify(message)}`);
  const first = JSON.parse(answers[0].body);
  assert.deepEqual(first, { method: own.method, path: own.path, body: own.body }, message);
  assert.equal(JSON.parse(answers[1].body).path, "/marker", message);
  return true;
}

const HANDWRITTEN = [
  "GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n",
  'POST /v1/queues/q/jobs HTTP/1.1\r\nHost: h\r\nContent-Length: 13\r\n\r\n{"payload":1}',
  "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
  "POST /a HTTP/1.1\r\nHost: h\r\ncontent-length: 5\r\n\r\nGET /",
  "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length:\t3 \t\r\n\r\nabc",
  "PUT /a?x=1 HTTP/1.1\r\nHost: h:1\r\nX-A:\r\nContent-Length: 2\r\n\r\n{}",
  "DELETE /v1/jobs/1 HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
  "OPTIONS /a HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n",
  "PATCH /a HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n\r\n\r\n\r\n\r\n\r\n",
];

Deno.test("RFC 9112 §6.3: Deno.serve ends each hand-written request where the parser does", async () => {
  await withRuntime(async (port) => {
    for (const message of HANDWRITTEN) assert.ok(await agree(port, message), message);
  });
});

const FIELD = fc.oneof(
  fc.constantFrom(
    "Host: h",
    "Host: 127.0.0.1:8080",
    "Connection: keep-alive",
    "Content-Type: application/json",
    "X-Pad: a b\tc",
    "Accept: */*",
    "Content-Length: 0",
    "Transfer-Encoding: chunked",
    "Expect: 100-continue",
  ),
  fc.stringMatching(/^[A-Za-z-]{1,8}: [ -~]{0,12}$/),
);

Deno.test("RFC 9112 §6.3: Deno.serve ends each generated request where the parser does", async () => {
  await withRuntime(async (port) => {
    let read = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"),
        fc.stringMatching(/^\/[a-z0-9/?=&]{0,16}$/),
        fc.array(FIELD, { maxLength: 6 }),
        fc.option(fc.nat({ max: 40 })),
        fc.stringMatching(/^[ -~\r\n]{0,40}$/),
        async (method, target, fields, length, body) => {
          const head = [`${method} ${target} HTTP/1.1`, "Host: h", ...fields];
          if (length !== null) head.push(`Content-Length: ${Math.min(length, body.length)}`);
          const text = head.join("\r\n") + "\r\n\r\n" +
            body.slice(0, length === null ? 0 : Math.min(length, body.length));
          if (await agree(port, text)) read++;
        },
      ),
      { numRuns: 150, seed: 38 },
    );
    assert.ok(read > 20, `${read} generated requests read by the parser`);
  });
});
