/**
 * A worker that calls an external service at most once per job, even across crashes.
 *
 * The pattern: before calling out, checkpoint "invoking"; after, checkpoint the external task
 * id; ack with it. A redelivery (after a crash, a lost connection, an expired lease) sees the
 * last checkpoint and reconciles instead of calling again:
 *   - "invoked" with a task id → the call happened: just ack with it;
 *   - "invoking" → we may or may not have called: ask the service by our reference first.
 *
 *   npx --yes deno@2.9.6 run -A examples/checkpoint_worker.ts
 *
 * It runs a fake payment service in-process and takes its jobs from the queue `payments` (the
 * producer example's invoices go to `charges`, so the two can share a server).
 */
import { consume, TegamiClient } from "../lib/client/mod.ts";

type Charge = { invoice: string; cents: number };
type Progress = { stage: "invoking" } | { stage: "invoked"; taskId: string } | null;

/** Stands in for a payment API that supports lookup by the caller's reference. */
export class FakePaymentService {
  readonly tasks = new Map<string, { id: string; charge: Charge }>();
  calls = 0;
  create(reference: string, charge: Charge): string {
    this.calls++;
    const id = `pay_${this.tasks.size + 1}`;
    this.tasks.set(reference, { id, charge });
    return id;
  }
  findByReference(reference: string): string | null {
    return this.tasks.get(reference)?.id ?? null;
  }
}

/** Starts the worker; `crashAfterCall` simulates a crash right after the external call. */
export function startWorker(url: string, service: FakePaymentService, crashAfterCall = false) {
  let crashed = false;
  return consume<Charge>("payments", async (charge, ctx) => {
    const reference = `tegami-job-${ctx.id}`;
    const progress = ctx.checkpoint as Progress;
    if (progress?.stage === "invoked") return { taskId: progress.taskId }; // done before
    if (progress?.stage === "invoking") {
      const existing = service.findByReference(reference);
      if (existing !== null) {
        await ctx.saveCheckpoint({ stage: "invoked", taskId: existing });
        return { taskId: existing, reconciled: true };
      }
    }
    await ctx.saveCheckpoint({ stage: "invoking" });
    const taskId = service.create(reference, charge);
    if (crashAfterCall && !crashed) {
      crashed = true;
      throw new Error("simulated crash between the call and the checkpoint");
    }
    await ctx.saveCheckpoint({ stage: "invoked", taskId });
    return { taskId };
  }, { url, concurrency: 4 });
}

if (import.meta.main) {
  const url = Deno.env.get("TEGAMI_URL") ?? "http://127.0.0.1:7700";
  const client = new TegamiClient({ url });
  const service = new FakePaymentService();
  const { id } = await client.enqueue("payments", { invoice: "INV-7", cents: 700 }, {
    backoff: { baseMs: 100, maxMs: 1000 },
  });
  const worker = startWorker(url, service, true);
  while ((await client.get(id)).state !== "done") await new Promise((r) => setTimeout(r, 50));
  await worker.close();
  console.log("result:", (await client.get(id)).result, "external calls:", service.calls);
}
