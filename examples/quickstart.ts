// npx --yes deno@2.9.6 run -A examples/quickstart.ts   (with a server running: see the README)
import { consume, TegamiClient } from "../lib/client/mod.ts";

const url = Deno.env.get("TEGAMI_URL") ?? "http://127.0.0.1:7700";
const client = new TegamiClient({ url });

// Producer: enqueue two jobs; the key makes a repeated enqueue a no-op.
const ids: number[] = [];
for (const to of ["ada@example.com", "grace@example.com"]) {
  const { id } = await client.enqueue("email", { to }, { key: `welcome:${to}` });
  console.log(`enqueued job ${id} for ${to}`);
  ids.push(id);
}

// Consumer: resolve → ack with the result; throw → nack and retry later with backoff.
const worker = consume<{ to: string }>("email", (payload, ctx) => {
  console.log(`sending to ${payload.to} (job ${ctx.id}, attempt ${ctx.attempt})`);
  return { sentAt: new Date().toISOString() };
}, { url, concurrency: 4 });

// Wait for these two jobs (others may use the queue too), then stop the consumer.
for (const id of ids) {
  while ((await client.get(id)).state !== "done") await new Promise((r) => setTimeout(r, 50));
}
await worker.close();
for (const id of ids) console.log(`job ${id}:`, (await client.get(id)).result);
