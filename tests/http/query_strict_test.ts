/**
 * Query parameters as the API document has them: a value given empty is not the parameter left
 * out, and a parameter given twice is refused rather than read once.
 */

import assert from "node:assert/strict";
import openapi from "../../lib/http/openapi.json" with { type: "json" };
import { startTestServer } from "../helpers/test_server.ts";

const LISTS = [
  "/v1/queues?",
  "/v1/schedules?",
  "/v1/queues/q/dead?",
  "/v1/queues/q/jobs?state=pending&",
];

Deno.test("parseNamePage() and the list queries refuse an empty limit or after with 400", async () => {
  await using server = await startTestServer();
  for (const list of LISTS) {
    for (const name of ["limit", "after"]) {
      const answer = await server.request("GET", `${list}${name}=`);
      assert.equal(answer.status, 400, list + name);
      assert.match(answer.body.error.message, new RegExp(`"${name}"`));
    }
  }
  const order = await server.request("GET", "/v1/queues/q/jobs?state=pending&order=");
  assert.equal(order.status, 400);
});

Deno.test("the list queries refuse a parameter given twice with 400 naming it", async () => {
  await using server = await startTestServer();
  for (const list of LISTS) {
    const answer = await server.request("GET", `${list}limit=1&limit=2`);
    assert.equal(answer.status, 400, list);
    assert.match(answer.body.error.message, /"limit": given more than once/);
  }
  const state = await server.request("GET", "/v1/queues/q/jobs?state=pending&state=dead");
  assert.equal(state.status, 400);
});

Deno.test("openapi.json allows atomic: null, which the server takes as absent", async () => {
  const batch = openapi.components.schemas.EnqueueRequest.oneOf[1] as {
    properties: { atomic: { type: string[] } };
  };
  assert.deepEqual(batch.properties.atomic.type, ["boolean", "null"]);
  await using server = await startTestServer();
  const answer = await server.request("POST", "/v1/queues/q/jobs", {
    jobs: [{ payload: 1 }],
    atomic: null,
  });
  assert.equal(answer.status, 201);
});
