/** The SDK's side of ordering groups: the `group` enqueue option and the handler's context. */

import assert from "node:assert/strict";
import { consume, TegamiClient } from "../../lib/client/mod.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { eventually } from "../helpers/ws_client.ts";

Deno.test("enqueue({group}) stores the group, and a handler sees it; one job of a group at a time", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const one = await client.enqueue("g", { n: 1 }, { group: "acct-1" });
  const [two] = await client.enqueueBatch("g", [{ payload: { n: 2 }, group: "acct-1" }]);
  assert.equal((await client.get(one.id)).group, "acct-1");
  assert.equal((await client.get(two.id)).group, "acct-1");
  let running = 0;
  let most = 0;
  const seen: (string | null)[] = [];
  const worker = consume("g", async (_payload, ctx) => {
    seen.push(ctx.group);
    most = Math.max(most, ++running);
    await new Promise((resolve) => setTimeout(resolve, 20));
    running--;
  }, { url: server.url, concurrency: 4 });
  await worker.ready();
  await eventually(async () => (await client.stats("g")).counts.done === 2, "2 done", 5000);
  await worker.close();
  assert.deepEqual(seen, ["acct-1", "acct-1"]);
  assert.equal(most, 1, "the group's jobs ran one at a time");
});
