/**
 * HEAD on every GET route (RFC 9110 §9.3.2): the same status and header fields as GET, no body;
 * each answer checked against openapi.json, which documents a HEAD for every GET.
 */

import assert from "node:assert/strict";
import openapi from "../../lib/http/openapi.json" with { type: "json" };
import { startTestServer } from "../helpers/test_server.ts";

/** The GET paths of the document, their parameters filled in. */
const GET_PATHS = Object.entries(openapi.paths as Record<string, Record<string, unknown>>)
  .filter(([, item]) => "get" in item)
  .map(([template]) =>
    template.replace("{queue}", "q").replace("{id}", "1").replace("{name}", "nightly")
      .replace("{group}", "acme")
  );

Deno.test("RFC 9110 §9.3.2: openapi.json documents a HEAD for every GET", () => {
  for (const [path, item] of Object.entries(openapi.paths as Record<string, object>)) {
    // GET /v1/ws is a WebSocket handshake, not a resource: a HEAD of it is 404.
    assert.equal("head" in item, "get" in item && path !== "/v1/ws", path);
  }
});

Deno.test("RFC 9110 §9.3.2: HEAD on every GET route answers GET's status and fields, no body", async () => {
  await using server = await startTestServer({ realTime: true });
  await server.request("POST", "/v1/queues/q/jobs", { payload: 1 });
  const skip = new Set(["/v1/events", "/v1/ws"]); // a stream, and a handshake: below
  for (const path of GET_PATHS.filter((p) => !skip.has(p))) {
    const query = path === "/v1/queues/q/jobs" ? "?state=pending" : "";
    const get = await server.request("GET", path + query);
    const head = await server.request("HEAD", path + query);
    assert.equal(head.status, get.status, path);
    assert.equal(head.body, "", path);
    assert.equal(head.headers.get("content-type"), get.headers.get("content-type"), path);
  }
});

Deno.test("RFC 9110 §9.3.2: HEAD on the event stream answers 200 and ends", async () => {
  await using server = await startTestServer({ realTime: true });
  const head = await server.request("HEAD", "/v1/events");
  assert.equal(head.status, 200);
  assert.match(head.headers.get("content-type") ?? "", /^text\/event-stream/);
  assert.equal(head.body, "");
});

Deno.test("RFC 6455 §4.1: HEAD on /v1/ws is no handshake and no resource: 404", async () => {
  await using server = await startTestServer({ realTime: true });
  // Undocumented, so not read through the document's check (it would parse an error body).
  const answer = await fetch(server.url + "/v1/ws", { method: "HEAD" });
  await answer.body?.cancel();
  assert.equal(answer.status, 404);
});
