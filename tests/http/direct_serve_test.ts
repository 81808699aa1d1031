/**
 * `--front-door off` (lib/http/direct_serve.ts): Deno.serve directly. EMFILE still never ends
 * the process, the body time limit still holds; idle connections are the reverse proxy's job.
 */

import assert from "node:assert/strict";
import { startTestServer } from "../helpers/test_server.ts";
import { spawnServer } from "../helpers/process_server.ts";

const encoder = new TextEncoder();

Deno.test("with --front-door off a stalled body still answers 408 at --body-timeout", async () => {
  await using s = await startTestServer({
    realTime: true,
    config: { frontDoor: "off", bodyTimeoutMs: 400 },
  });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: s.server.port });
  await conn.write(encoder.encode(
    "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
      'Content-Length: 100\r\n\r\n{"payload":',
  ));
  const buffer = new Uint8Array(4096);
  const started = performance.now();
  const n = await conn.read(buffer);
  const ms = performance.now() - started;
  conn.close();
  assert.match(new TextDecoder().decode(buffer.subarray(0, n ?? 0)), /^HTTP\/1\.1 408 /);
  assert.ok(ms >= 350 && ms < 2500, `answered after ${ms.toFixed(0)} ms`);
});

Deno.test({
  name: "with --front-door off, EMFILE never ends the process and serving resumes",
  sanitizeResources: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "tegami-direct-" });
    await using proc = await spawnServer(["--db", `${dir}/t.db`, "--front-door", "off"], {
      nofile: 256,
    });
    const { hostname, port } = new URL(proc.url);
    const keep = await Deno.connect({ hostname, port: Number(port) });
    const ask = async () => {
      await keep.write(encoder.encode("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
      const buffer = new Uint8Array(4096);
      const n = await keep.read(buffer);
      return new TextDecoder().decode(buffer.subarray(0, n ?? 0));
    };
    assert.match(await ask(), /^HTTP\/1\.1 200 /);
    const held: Deno.Conn[] = [];
    for (let i = 0; i < 400; i++) {
      try {
        const conn = await Deno.connect({ hostname, port: Number(port) });
        await conn.write(encoder.encode("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
        held.push(conn);
      } catch {
        break; // the listener is down while descriptors are short
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.match(await ask(), /^HTTP\/1\.1 200 /, "a live keep-alive connection is still served");
    for (const conn of held) conn.close();
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const fresh = await fetch(`${proc.url}/healthz`);
    assert.equal(fresh.status, 200, "new connections are served again");
    await fresh.body?.cancel();
    keep.close();
    proc.kill("SIGTERM");
    const { code, stderr } = await proc.exited();
    assert.equal(code, 0, stderr);
    assert.match(stderr, /listener failed; re-opening it/);
    assert.doesNotMatch(stderr, /Uncaught/);
    await Deno.remove(dir, { recursive: true });
  },
});
