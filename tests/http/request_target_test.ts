/**
 * The rule for the request target and its authority (lib/http/request_target.ts), on what
 * `Deno.serve` hands over: the URL it made and the `Host` field.
 */

import assert from "node:assert/strict";
import { judgeServed, validHost } from "../../lib/http/request_target.ts";

Deno.test('RFC 9112 §3.2: validHost() takes uri-host [":" port] and nothing else', () => {
  for (const host of ["h", "127.0.0.1:8080", "[::1]", "[::1]:1", "my_service:80", "a.b-c", "h:"]) {
    assert.ok(validHost(host), host);
  }
  const bad = [
    "",
    "h/x",
    "h?q",
    "h#f",
    "u@h",
    "h:99999",
    "h:x",
    "a b",
    "[::1",
    "h:1/healthz#",
    "a,b c",
  ];
  for (const host of bad) assert.ok(!validHost(host), host);
});

Deno.test("RFC 9112 §3.2: judgeServed() refuses a missing Host on HTTP/1.x, not on HTTP/2", () => {
  assert.equal(judgeServed("GET", "http://localhost:1/healthz", null, false)?.status, 400);
  assert.equal(judgeServed("GET", "http://127.0.0.1:1/healthz", null, true), null);
});

Deno.test("RFC 9112 §3.2: judgeServed() refuses a Host the runtime would have put in the path", () => {
  const host = "127.0.0.1:1/v1/queues/rerouted/jobs#";
  assert.equal(judgeServed("POST", `http://${host}/no/such/path`, host, false)?.status, 400);
});

Deno.test("RFC 9112 §3.2.2: judgeServed() takes an absolute-form target's own authority", () => {
  assert.equal(judgeServed("GET", "http://foreign.example/healthz", "127.0.0.1", false), null);
  assert.equal(judgeServed("GET", "http://u@foreign.example/x", "127.0.0.1", false)?.status, 400);
  assert.equal(judgeServed("GET", "ftp://foreign.example/x", "127.0.0.1", false)?.status, 400);
});

Deno.test("RFC 9112 §3: judgeServed() answers 414 for a request line past 8 KiB", () => {
  const target = "/" + "a".repeat(8 * 1024);
  assert.equal(judgeServed("GET", `http://h${target}`, "h", false)?.status, 414);
  assert.equal(judgeServed("GET", `http://h/${"a".repeat(8000)}`, "h", false), null);
});
