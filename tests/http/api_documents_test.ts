/**
 * The API documents the server serves: `GET /openapi.json` and `GET /asyncapi.json` answer the
 * files in `lib/` exactly, open even with auth on; every route the server answers is in the
 * OpenAPI document, and every documented operation is a route (so neither can drift alone).
 */

import assert from "node:assert/strict";
import { isSqsRequest } from "../helpers/sqs_paths.ts";
import openapi from "../../lib/http/openapi.json" with { type: "json" };
import asyncapi from "../../lib/ws/asyncapi.json" with { type: "json" };
import { startTestServer } from "../helpers/test_server.ts";

Deno.test("GET /openapi.json and /asyncapi.json serve the embedded documents, no token needed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami-docs-" });
  const tokensFile = `${dir}/tokens.json`;
  await Deno.writeTextFile(
    tokensFile,
    JSON.stringify([{ name: "a", token: "docs-admin-token-0123456789", scopes: ["admin"] }]),
  );
  await using server = await startTestServer({ dir, config: { tokensFile } });
  try {
    const open = await server.request("GET", "/openapi.json");
    assert.equal(open.status, 200);
    assert.deepEqual(open.body, openapi);
    const async = await server.request("GET", "/asyncapi.json");
    assert.equal(async.status, 200);
    assert.deepEqual(async.body, asyncapi);
    assert.equal((await server.request("GET", "/v1/queues")).status, 401, "auth is on");
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("every documented operation is a route, and a wrong method of it answers 404", async () => {
  await using server = await startTestServer();
  const methods = ["get", "post", "delete", "put", "patch"];
  let operations = 0;
  for (const [template, item] of Object.entries(openapi.paths)) {
    const path = template.replace("{queue}", "q").replace("{id}", "999999")
      .replace("{name}", "nightly").replace("{group}", "acme");
    for (const method of methods) {
      const documented = method in item;
      if (path === "/v1/ws" || path === "/v1/events") continue; // not plain request/response
      if (isSqsRequest(method, path)) continue; // the SQS API's (docs/sqs.md, tests/sqs)
      const answer = await server.request(
        method.toUpperCase(),
        path + (
          template.endsWith("/jobs") && method === "get" ? "?state=pending" : ""
        ),
      );
      if (documented) {
        operations++;
        assert.notEqual(
          answer.body?.error?.message?.includes("No route"),
          true,
          `${method} ${path}`,
        );
      } else {
        assert.equal(answer.status, 404, `${method} ${path} is not documented, so not a route`);
      }
    }
  }
  assert.ok(operations >= 20, `${operations} operations`);
});
