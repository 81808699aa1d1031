/**
 * A producer: enqueues invoices to charge, with the common job options: a dedup key, a priority,
 * attempts and backoff, a delay, a batch, and an error answered for a bad job.
 *
 *   npx --yes deno@2.9.6 run -A examples/producer.ts   (TEGAMI_URL / TEGAMI_TOKEN to point elsewhere)
 */
import { TegamiClient, TegamiError } from "../lib/client/mod.ts";

const client = new TegamiClient({
  url: Deno.env.get("TEGAMI_URL") ?? "http://127.0.0.1:7700",
  token: Deno.env.get("TEGAMI_TOKEN"),
});

// One job: the dedup key makes retrying this call safe (same id back, nothing added).
const first = await client.enqueue("charges", { invoice: "INV-1001", cents: 4200 }, {
  key: "INV-1001",
  priority: 10, // higher runs first
  maxAttempts: 8,
  backoff: { baseMs: 2_000, maxMs: 600_000 },
});
console.log("INV-1001 →", first);

// A batch, all or nothing; one of them delayed by a minute.
const batch = await client.enqueueBatch("charges", [
  { payload: { invoice: "INV-1002", cents: 1500 }, key: "INV-1002" },
  { payload: { invoice: "INV-1003", cents: 990 }, key: "INV-1003", delayMs: 60_000 },
]);
console.log("batch →", batch);

// Errors come back typed, with the server's code.
try {
  await client.enqueue("charges", { invoice: "INV-X" }, { maxAttempts: 0 });
} catch (error) {
  if (error instanceof TegamiError) console.log(`refused: ${error.code}: ${error.message}`);
}

console.log(await client.stats("charges"));
