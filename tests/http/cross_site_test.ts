/**
 * Cross-site protection without tokens (lib/http/cross_site.ts): what a web page could make the
 * user's browser send is refused, each case on its own; with tokens, token holders see no change.
 */

import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";
import { upgradeStatus } from "../helpers/raw_ws.ts";
import { wsUrl } from "../helpers/ws_client.ts";
import { TokenSet } from "../../lib/auth/tokens.ts";

/** One raw HTTP/1.1 request with exactly the given headers; answers status and parsed body. */
async function raw(
  server: TestServer,
  method: string,
  path: string,
  headers: Record<string, string>,
  body = "",
): Promise<{ status: number; code: string | null }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.server.port });
  const lines = [`${method} ${path} HTTP/1.1`, "Connection: close"];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== "" || method === "POST") lines.push(`Content-Length: ${body.length}`);
  await conn.write(new TextEncoder().encode(lines.join("\r\n") + "\r\n\r\n" + body));
  let text = "";
  const buffer = new Uint8Array(8192);
  for (;;) {
    const n = await conn.read(buffer).catch(() => null);
    if (n === null) break;
    text += new TextDecoder().decode(buffer.subarray(0, n));
  }
  conn.close();
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  const code = /"code":"([a-z_]+)"/.exec(text)?.[1] ?? null;
  return { status, code };
}

const HOST = "127.0.0.1";

async function paused(server: TestServer, queue: string): Promise<boolean> {
  return ((await server.request("GET", `/v1/queues/${queue}`)).body as { paused: boolean }).paused;
}

Deno.test("an empty text/plain POST (a no-preflight fetch) is refused with 415", async () => {
  await using server = await startTestServer();
  const answer = await raw(server, "POST", "/v1/queues/q/pause", {
    Host: HOST,
    "Content-Type": "text/plain;charset=UTF-8",
  });
  assert.deepEqual(answer, { status: 415, code: "unsupported_media_type" });
  assert.equal(await paused(server, "q"), false);
});

Deno.test("an empty HTML form POST cannot take leases or requeue dead jobs", async () => {
  await using server = await startTestServer();
  await server.request("POST", "/v1/queues/q/jobs", { payload: 1 });
  for (const type of ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
    for (
      const path of ["/v1/queues/q/leases", "/v1/queues/q/dead/requeue", "/v1/queues/q/resume"]
    ) {
      const answer = await raw(server, "POST", path, { Host: HOST, "Content-Type": type });
      assert.deepEqual(answer, { status: 415, code: "unsupported_media_type" }, `${type} ${path}`);
    }
  }
  const stats = await server.request("GET", "/v1/queues/q");
  assert.equal((stats.body as { counts: { pending: number } }).counts.pending, 1, "not leased");
});

Deno.test("a foreign Host (DNS rebinding) is refused with 403, on reads and writes alike", async () => {
  await using server = await startTestServer();
  const port = server.server.port;
  for (const [method, path] of [["GET", "/v1/queues"], ["DELETE", "/v1/jobs/1"]]) {
    const answer = await raw(server, method, path, { Host: `evil.example:${port}` });
    assert.deepEqual(answer, { status: 403, code: "forbidden" }, `${method} ${path}`);
  }
  for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, "app.localhost"]) {
    assert.equal((await raw(server, "GET", "/healthz", { Host: host })).status, 200, host);
  }
});

Deno.test("--allowed-hosts admits a name besides localhost and IP addresses", async () => {
  await using server = await startTestServer({ config: { allowedHosts: ["queue.internal"] } });
  const port = server.server.port;
  const ok = await raw(server, "GET", "/v1/queues", { Host: `Queue.Internal:${port}` });
  assert.equal(ok.status, 200);
  assert.equal((await raw(server, "GET", "/v1/queues", { Host: "other.internal" })).status, 403);
});

Deno.test("a foreign Origin on a state-changing HTTP route is refused with 403", async () => {
  await using server = await startTestServer();
  const answer = await raw(
    server,
    "POST",
    "/v1/queues/q/pause",
    { Host: HOST, Origin: "https://evil.example", "Content-Type": "application/json" },
    "{}",
  );
  assert.deepEqual(answer, { status: 403, code: "forbidden" });
  assert.equal(await paused(server, "q"), false);
  const same = await raw(
    server,
    "POST",
    "/v1/queues/q/pause",
    { Host: `${HOST}:${server.server.port}`, Origin: server.url },
    "",
  );
  assert.equal(same.status, 200, "the same origin (the dashboard) may");
  const opaque = await raw(server, "POST", "/v1/queues/q/resume", { Host: HOST, Origin: "null" });
  assert.equal(opaque.status, 403, "a sandboxed page's Origin: null is foreign");
});

Deno.test("a foreign Origin on the WebSocket upgrade is refused with 403", async () => {
  await using server = await startTestServer();
  const answer = await upgradeStatus(wsUrl(server.url), {
    headers: { Origin: "https://evil.example" },
  });
  assert.equal(answer.status, 403);
  assert.equal(answer.body?.error?.code, "forbidden");
});

Deno.test("with tokens, a token holder's foreign Host, Origin and empty text/plain still work", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami-cross-" });
  const token = "admin-token-0123456789";
  const file = `${dir}/tokens.json`;
  await Deno.writeTextFile(file, JSON.stringify([{ name: "ops", token, scopes: ["admin"] }]));
  await Deno.chmod(file, 0o600);
  TokenSet.parse(await Deno.readTextFile(file));
  try {
    await using server = await startTestServer({ dir, config: { tokensFile: file } });
    const answer = await raw(server, "POST", "/v1/queues/q/pause", {
      Host: "queue.example.com",
      Origin: "https://tools.example.com",
      "Content-Type": "text/plain",
      Authorization: `Bearer ${token}`,
    });
    assert.equal(answer.status, 200);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
