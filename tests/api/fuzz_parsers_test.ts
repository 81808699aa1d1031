/**
 * Fuzzing the request parsers shared by HTTP and WebSocket (lib/api/requests.ts, lib/ws/protocol.ts,
 * lib/http/body.ts) in-process, where tens of thousands of inputs take a second: whatever the
 * input, a parser answers or throws a `TegamiError` with a 4xx code — never a `TypeError`,
 * `RangeError` or anything else that would become a 500 — and what it accepts is within the
 * documented limits. The end-to-end fuzzers (fuzz_http_test.ts, fuzz_ws_test.ts) then show the
 * same holds through the server.
 */

import fc from "fast-check";
import assert from "node:assert/strict";
import { TegamiError } from "../../lib/core/errors.ts";
import { formatRate, parseQueueSettings, settingsView } from "../../lib/core/queue_settings.ts";
import { readJsonBody } from "../../lib/http/body.ts";
import {
  MAX_ATTEMPTS,
  MAX_KEY_BYTES,
  MAX_LEASE_BATCH,
  MAX_LEASE_MS,
  MAX_WAIT_MS,
  MIN_LEASE_MS,
  QUEUE_NAME,
} from "../../lib/core/limits.ts";
import {
  jobId,
  parseAck,
  parseCheckpoint,
  parseDeadQuery,
  parseEmpty,
  parseEnqueue,
  parseExtend,
  parseLease,
  parseNack,
  parseRequeue,
  queueName,
  utf8Length,
} from "../../lib/api/requests.ts";
import { decodeFrame } from "../../lib/ws/protocol.ts";
import { brokenText, deepText, fuzzParams, jsonText, mutated } from "../helpers/fuzz.ts";

const LIMITS = { maxPayload: 2048, maxBatch: 10 };
const CLIENT_ERRORS = new Set(["invalid_json", "validation_failed", "payload_too_large"]);

/** Runs `parse`; a throw must be a TegamiError with a client error code. */
function parsesOrRefuses<T>(parse: () => T, label: string): T | null {
  try {
    return parse();
  } catch (error) {
    assert.ok(error instanceof TegamiError, `${label}: threw ${error}`);
    assert.ok(CLIENT_ERRORS.has(error.code), `${label}: ${error.code} ${error.message}`);
    assert.ok(error.message.length > 0 && error.message.length < 2000, `${label}: message`);
    return null;
  }
}

/** Any text, mostly JSON of the shapes the parsers see. */
const anyText = fc.oneof(
  { weight: 6, arbitrary: jsonText },
  { weight: 2, arbitrary: mutated(jsonText) },
  { weight: 1, arbitrary: brokenText },
  { weight: 1, arbitrary: deepText },
);

/** Parsed JSON values (texts that do not parse are skipped). */
const anyValue = jsonText.chain((text) => {
  try {
    return fc.constant(JSON.parse(text) as unknown);
  } catch {
    return fc.constant(undefined as unknown);
  }
});

/** Sometimes valid, sometimes a little off: a string that may hold a NUL or a lone surrogate. */
const edgyString = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
  { weight: 1, arbitrary: fc.constantFrom("a\u0000b", "x\ud800", "k".repeat(600)) },
);
const edgyInt = fc.oneof(
  fc.integer({ min: -5, max: 200 }),
  fc.integer({ min: 50, max: 50_000_000 }),
  fc.constantFrom(0, 1, 99, 100, 1000, 1001, 43_200_000, 43_200_001, 1.5, -1),
);

/** Bodies shaped like the real requests, so that the parsers accept a good share of them. */
const shapedValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.record({
    payload: fc.jsonValue({ maxDepth: 2 }),
    priority: edgyInt,
    key: fc.option(edgyString),
    delay_ms: edgyInt,
    lease_ms: fc.option(edgyInt),
    max_attempts: edgyInt,
  }, { requiredKeys: ["payload"] }),
  fc.record({ max: edgyInt, wait_ms: edgyInt, lease_ms: fc.option(edgyInt) }, {
    requiredKeys: [],
  }),
  fc.record({
    token: fc.string({ maxLength: 30 }),
    error: fc.option(edgyString),
    delay_ms: edgyInt,
    dead: fc.boolean(),
  }, { requiredKeys: ["token"] }),
  fc.record({
    concurrency: fc.option(edgyInt),
    rate: fc.option(
      fc.oneof(edgyString, fc.constantFrom("100/1s", "5/250ms", "0/1s", "1/25h", "10/s", "1/0ms")),
    ),
    group_limit: fc.option(edgyInt),
    lease_ms: fc.option(edgyInt),
    retain_done_ms: fc.option(edgyInt),
  }, { requiredKeys: [] }),
);

Deno.test("every body parser answers or refuses with a 4xx code, whatever the value", () => {
  // What was accepted, so the checks on accepted values are known to have run.
  const seen = new Set<string>();
  fc.assert(
    fc.property(fc.oneof(anyValue, shapedValue), (value) => {
      const now = 1_700_000_000_000;
      const enqueued = parsesOrRefuses(() => parseEnqueue(value, LIMITS, now), "enqueue");
      for (const job of enqueued?.jobs ?? []) {
        assert.ok(utf8Length(job.payload) <= LIMITS.maxPayload);
        assert.ok(
          job.max_attempts === null || (job.max_attempts >= 1 && job.max_attempts <= MAX_ATTEMPTS),
        );
        assert.ok(job.lease_ms === null || job.lease_ms >= MIN_LEASE_MS);
        assert.ok(job.key === null || utf8Length(job.key) <= MAX_KEY_BYTES);
        assert.ok(job.key === null || (job.key.isWellFormed() && !job.key.includes("\u0000")));
        assert.ok(Number.isSafeInteger(job.run_at) && job.run_at >= now);
        if (job.key !== null) seen.add("enqueue with key");
        if (job.lease_ms !== null) seen.add("enqueue with lease_ms");
      }
      assert.ok((enqueued?.jobs.length ?? 0) <= LIMITS.maxBatch);
      const lease = parsesOrRefuses(() => parseLease(value), "lease");
      if (lease !== null) {
        assert.ok(lease.max >= 1 && lease.max <= MAX_LEASE_BATCH);
        assert.ok(lease.wait_ms >= 0 && lease.wait_ms <= MAX_WAIT_MS);
        assert.ok(lease.lease_ms === null || lease.lease_ms <= MAX_LEASE_MS);
        if (value != null && Object.keys(value).length > 0) seen.add("lease with fields");
      }
      parsesOrRefuses(() => parseAck(value, LIMITS), "ack");
      const nack = parsesOrRefuses(() => parseNack(value), "nack");
      if (nack?.error != null) {
        assert.ok(nack.error.isWellFormed() && !nack.error.includes("\u0000"), "nack error");
        seen.add("nack with error");
      }
      parsesOrRefuses(() => parseExtend(value), "extend");
      parsesOrRefuses(() => parseCheckpoint(value, LIMITS), "checkpoint");
      parsesOrRefuses(() => parseRequeue(value), "requeue");
      parsesOrRefuses(() => parseEmpty(value), "empty");
      const settings = parsesOrRefuses(() => parseQueueSettings(value), "queue settings");
      if (settings !== null) {
        // What is answered parses back to the same settings (a GET then a PUT changes nothing).
        assert.deepEqual(parseQueueSettings(settingsView(settings)), settings);
        if (settings.rate !== null) {
          assert.ok(settings.rate.limit >= 1 && settings.rate.per_ms >= 1);
          assert.match(formatRate(settings.rate), /^\d+\/\d+(ms|s|m|h)$/);
          seen.add("settings with rate");
        }
      }
      parsesOrRefuses(() => jobId(value), "job id");
      const queue = parsesOrRefuses(() => queueName(value), "queue name");
      if (queue !== null) assert.match(queue, QUEUE_NAME);
    }),
    fuzzParams(5000, 0x9a11e1),
  );
  assert.deepEqual(
    [...seen].sort(),
    [
      "enqueue with key",
      "enqueue with lease_ms",
      "lease with fields",
      "nack with error",
      "settings with rate",
    ],
  );
});

const OPS = ["auth", "subscribe", "unsubscribe", "ack", "nack", "extend", "checkpoint", "enqueue"];

/** Frames shaped like real ones (op, ref, id, queue in and out of place), as text. */
const shapedFrame = fc.record({
  op: fc.oneof(fc.constantFrom(...OPS), fc.string({ maxLength: 8 })),
  ref: fc.oneof(fc.integer(), fc.string({ maxLength: 10 }), fc.constant(null)),
  id: fc.oneof(fc.integer({ min: -1, max: 100 }), fc.constant("7")),
  queue: fc.oneof(fc.constantFrom("q", "a.b", "", "bad name"), fc.integer()),
  token: fc.string({ maxLength: 10 }),
}, { requiredKeys: ["op"] }).map((frame) => JSON.stringify(frame));

Deno.test("decodeFrame() answers or refuses with a 4xx code, whatever the text", () => {
  const accepted = new Set<string>();
  fc.assert(
    fc.property(fc.oneof(anyText, shapedFrame), (text) => {
      const frame = parsesOrRefuses(() => decodeFrame(text), "frame");
      if (frame === null) return;
      assert.ok(OPS.includes(frame.op));
      assert.ok(!Object.hasOwn(frame.body, "op") && !Object.hasOwn(frame.body, "ref"));
      accepted.add(frame.op);
    }),
    fuzzParams(3000, 0x0de0de),
  );
  assert.deepEqual([...accepted].sort(), [...OPS].sort(), "every op was accepted at least once");
});

Deno.test("path segments and query strings are refused with 400, never thrown past", () => {
  fc.assert(
    fc.property(
      fc.string({ unit: "binary", maxLength: 30 }),
      fc.string({ maxLength: 30 }),
      (segment, query) => {
        parsesOrRefuses(() => jobId(segment), "id segment");
        parsesOrRefuses(() => queueName(segment), "queue segment");
        parsesOrRefuses(() => parseDeadQuery(new URLSearchParams(query)), "dead query");
      },
    ),
    fuzzParams(5000, 0x5e6e47),
  );
});

Deno.test("readJsonBody() answers or refuses with a 4xx code, whatever the bytes and type", async () => {
  const types = fc.option(
    fc.oneof(
      fc.constantFrom(
        "application/json",
        "text/plain",
        "application/x+json",
        "",
        ";",
        "application/",
      ),
      fc.string({ maxLength: 20 }),
    ),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(anyText.map((t) => new TextEncoder().encode(t)), fc.uint8Array({ maxLength: 64 })),
      types,
      fc.option(fc.oneof(fc.nat(5000).map(String), fc.constantFrom("-1", "abc", "1e3", ""))),
      async (bytes, type, length) => {
        const headers = new Headers();
        try {
          if (type !== null) headers.set("content-type", type);
        } catch {
          return; // not a valid header value: no request could carry it
        }
        if (length !== null) headers.set("content-length", length);
        const request = new Request("http://x/", {
          method: "POST",
          headers,
          body: new Uint8Array(bytes),
        });
        try {
          await readJsonBody(request, 1024);
        } catch (error) {
          assert.ok(error instanceof TegamiError, `threw ${error}`);
          assert.ok(
            [...CLIENT_ERRORS, "unsupported_media_type"].includes(error.code),
            `${error.code}: ${error.message}`,
          );
        }
      },
    ),
    fuzzParams(2000, 0xb0d1e5),
  );
});
