/**
 * Bulk import: NDJSON lines from a stream, sent in all-or-nothing batches, with progress and a
 * summary. Each line is a payload, or with `linesAreJobs` a job object (`{payload, key, …}`).
 * A line that is not JSON stops the import before its batch is sent, naming the line. An input
 * that cannot be read, or holds no line at all, is a failed import: in a pipeline
 * (`cat jobs.ndjson | tegami enqueue q`) that is how a missing file shows.
 *
 * @module
 */

import type { BatchJob, JobOptions, TegamiClient } from "../client/mod.ts";
import { TegamiError } from "../core/errors.ts";

/** Options of {@linkcode enqueueStream}. */
export interface EnqueueStreamOptions {
  /** Jobs per request. @default 500 */
  batchSize?: number;
  /** Lines are job objects, not payloads. @default false */
  linesAreJobs?: boolean;
  /** Options applied to every job (a job object's own fields win). */
  defaults?: JobOptions;
  /** Called with a one-line progress text after each batch. */
  progress?: (text: string) => void;
  /** The input's size in bytes when known (a file on stdin): the progress line shows a bar. */
  inputBytes?: number | null;
}

/** What an import did. */
export interface EnqueueSummary {
  /** Jobs sent and stored (new or deduplicated). */
  sent: number;
  /** New jobs. */
  created: number;
  /** Deduplicated jobs. */
  deduplicated: number;
  /** Lines that held a job (blank lines are skipped). */
  lines: number;
  /** True if the import stopped on an error or read no line. */
  failed: boolean;
  /** The summary line. */
  line: string;
}

const JOB_KEYS: Record<string, keyof JobOptions> = {
  priority: "priority",
  key: "key",
  key_ttl_ms: "keyTtlMs",
  on_duplicate: "onDuplicate",
  group: "group",
  delay_ms: "delayMs",
  run_at: "runAt",
  max_attempts: "maxAttempts",
  lease_ms: "leaseMs",
};

function toBatchJob(value: unknown, lineNo: number, defaults: JobOptions): BatchJob {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TegamiError("validation_failed", `Line ${lineNo}: expected a job object`);
  }
  const fields = value as Record<string, unknown>;
  if (!Object.hasOwn(fields, "payload")) {
    throw new TegamiError("validation_failed", `Line ${lineNo}: the job has no "payload"`);
  }
  const job: BatchJob = { ...defaults, payload: fields.payload };
  for (const [name, value] of Object.entries(fields)) {
    if (name === "payload") continue;
    if (name === "backoff") {
      const b = value as { base_ms?: number; max_ms?: number };
      job.backoff = { baseMs: b?.base_ms as number, maxMs: b?.max_ms as number };
      continue;
    }
    const option = JOB_KEYS[name];
    if (option === undefined) {
      throw new TegamiError("validation_failed", `Line ${lineNo}: unknown field "${name}"`);
    }
    (job as unknown as Record<string, unknown>)[option] = value;
  }
  return job;
}

/** Reads NDJSON from `input` and enqueues it in batches. */
export async function enqueueStream(
  client: TegamiClient,
  queue: string,
  input: ReadableStream<Uint8Array>,
  options: EnqueueStreamOptions = {},
): Promise<EnqueueSummary> {
  const batchSize = options.batchSize ?? 500;
  const defaults = options.defaults ?? {};
  const started = performance.now();
  let sent = 0;
  let created = 0;
  let deduplicated = 0;
  let lineNo = 0;
  let jobLines = 0;
  let batch: BatchJob[] = [];
  let batchFirstLine = 1;
  let bytesRead = 0;
  const rate = () => Math.round(sent / Math.max((performance.now() - started) / 1000, 0.001));
  const flush = async () => {
    if (batch.length === 0) return;
    try {
      const answers = await client.enqueueBatch(queue, batch);
      for (const a of answers) a.deduplicated ? deduplicated++ : created++;
    } catch (error) {
      const e = error instanceof TegamiError ? error : new TegamiError("internal", String(error));
      throw new TegamiError(e.code, `Lines ${batchFirstLine}–${lineNo}: ${e.message}`);
    }
    sent += batch.length;
    batch = [];
    batchFirstLine = lineNo + 1;
    options.progress?.(
      progressBar(bytesRead, options.inputBytes ?? null) +
        `enqueued ${sent} jobs to ${queue} (${rate()}/s)`,
    );
  };
  let failure: string | null = null;
  try {
    const counted = input.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          bytesRead += chunk.byteLength;
          controller.enqueue(chunk);
        },
      }),
    );
    const lines = counted.pipeThrough(new TextDecoderStream()).pipeThrough(lineSplitter());
    for await (const line of lines) {
      lineNo++;
      if (line.trim() === "") continue;
      jobLines++;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        throw new TegamiError("invalid_json", `Line ${lineNo}: not valid JSON`);
      }
      batch.push(
        options.linesAreJobs === true
          ? toBatchJob(value, lineNo, defaults)
          : { ...defaults, payload: value },
      );
      if (batch.length >= batchSize) await flush();
    }
    await flush();
  } catch (error) {
    // Sending failures arrive as TegamiErrors (flush wraps them); anything else is the input's.
    failure = error instanceof TegamiError
      ? `${error.code}: ${error.message}`
      : `Cannot read the input: ${(error as Error).message ?? String(error)}`;
  }
  if (failure === null && jobLines === 0) {
    failure = "the input was empty (no NDJSON lines to enqueue)";
  }
  const seconds = (performance.now() - started) / 1000;
  const line = `enqueued ${sent} jobs to ${queue} (${created} new, ${deduplicated} deduplicated) ` +
    `in ${seconds.toFixed(1)} s, ${rate()} jobs/s` +
    (failure === null ? "" : `; stopped: ${failure}`);
  return { sent, created, deduplicated, lines: jobLines, failed: failure !== null, line };
}

/** `[█████░░░░░]  50% ` when the total is known, else nothing. */
export function progressBar(done: number, total: number | null, width = 24): string {
  if (total === null || total <= 0) return "";
  const fraction = Math.min(1, done / total);
  const filled = Math.round(fraction * width);
  return `[${"█".repeat(filled)}${"░".repeat(width - filled)}] ${
    String(Math.floor(fraction * 100)).padStart(3)
  }% `;
}

/** Splits a text stream into lines (without their `\n` / `\r\n`). */
function lineSplitter(): TransformStream<string, string> {
  let rest = "";
  return new TransformStream({
    transform(chunk, controller) {
      rest += chunk;
      const parts = rest.split("\n");
      rest = parts.pop()!;
      for (const part of parts) controller.enqueue(part.endsWith("\r") ? part.slice(0, -1) : part);
    },
    flush(controller) {
      if (rest !== "") controller.enqueue(rest);
    },
  });
}
