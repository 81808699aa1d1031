/**
 * The body budget (lib/http/body_budget.ts): request bodies being read hold their bytes against
 * one budget, so stalled uploads cannot grow the server's memory. Unit cases first, then 40
 * stalled 16 MiB bodies against a real server process, its RSS read from /proc.
 */

import assert from "node:assert/strict";
import { BodyBudget } from "../../lib/http/body_budget.ts";
import { TegamiError } from "../../lib/core/errors.ts";
import { spawnServer } from "../helpers/process_server.ts";

Deno.test("BodyBudget.take() refuses bytes past its limit with 503 unavailable and Retry-After", () => {
  const budget = new BodyBudget(100);
  budget.take(60);
  assert.throws(() => budget.take(41), (error: unknown) => {
    assert.ok(error instanceof TegamiError);
    assert.equal(error.code, "unavailable");
    assert.equal(error.status, 503);
    assert.equal(error.retryAfter, 1);
    return true;
  });
  assert.equal(budget.held, 60, "a refused take holds nothing");
  budget.give(60);
  budget.take(100);
  assert.equal(budget.held, 100);
});

function rssMiB(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

/** Writes `bytes` in pieces, giving up quietly when the server stops reading or closes. */
async function trickle(conn: Deno.Conn, bytes: number): Promise<void> {
  const piece = new Uint8Array(256 * 1024).fill(0x20);
  for (let sent = 0; sent < bytes; sent += piece.length) {
    const wrote = conn.write(piece).then(() => true, () => false);
    const stalled = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 2000));
    if (!await Promise.race([wrote, stalled])) return;
  }
}

Deno.test({
  name: "40 stalled 16 MiB bodies keep the server's RSS under 300 MiB, and it keeps serving",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "tegami-budget-" });
    await using proc = await spawnServer(["--db", `${dir}/t.db`, "--body-timeout", "1h"]);
    const pid = proc.child.pid;
    const before = rssMiB(pid);
    const { hostname, port } = new URL(proc.url);
    const conns: Deno.Conn[] = [];
    const size = 16 * 1024 * 1024;
    try {
      await Promise.all(Array.from({ length: 40 }, async () => {
        const conn = await Deno.connect({ hostname, port: Number(port) });
        conns.push(conn);
        await conn.write(new TextEncoder().encode(
          "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
            `Content-Length: ${size}\r\n\r\n`,
        ));
        // Everything but the last MiB, then nothing more: a stalled upload.
        await trickle(conn, size - 1024 * 1024);
      }));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const during = rssMiB(pid);
      const health = await fetch(`${proc.url}/healthz`);
      assert.equal(health.status, 200);
      await health.body?.cancel();
      console.log(
        `40 stalled 16 MiB bodies: RSS ${before.toFixed(0)} MiB before, ${
          during.toFixed(0)
        } MiB while stalled (budget 64 MiB)`,
      );
      assert.ok(during < 300, `RSS ${during.toFixed(0)} MiB`);
    } finally {
      for (const conn of conns) {
        try {
          conn.close();
        } catch { /* closed */ }
      }
    }
    proc.kill("SIGTERM");
    assert.equal((await proc.exited()).code, 0);
    await Deno.remove(dir, { recursive: true });
  },
});
