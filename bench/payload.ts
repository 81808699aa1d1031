/**
 * The job every workload sends: exactly {@linkcode PAYLOAD_BYTES} bytes of JSON carrying its
 * sequence number `n` and the time `t` it was sent, so any consumer can compute enqueue→receipt
 * latency from the payload alone, whichever system carried it.
 *
 * @module
 */

/** Size of every payload's JSON text, in bytes. */
export const PAYLOAD_BYTES = 100;

/** A decoded payload, as a consumer of any system sees it. */
export interface Stamp {
  /** Sequence number within the workload; absent on filler jobs. */
  n?: number;
  /** When it was sent, on the {@linkcode now} clock; absent on filler jobs. */
  t?: number;
}

/**
 * Milliseconds on a clock shared by the main thread and Workers (`timeOrigin` + monotonic
 * offset), with sub-millisecond resolution.
 */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

/** Pads `head` (a JSON object's text without its closing brace) to exactly PAYLOAD_BYTES. */
export function padded(head: string): string {
  const room = PAYLOAD_BYTES - head.length - `,"pad":""}`.length;
  if (room < 0) throw new Error(`Cannot build a payload: ${head.length} bytes before padding`);
  return `${head},"pad":"${"x".repeat(room)}"}`;
}

/** The payload of job `n`, stamped with the current time. */
export function stampedPayload(n: number): string {
  return padded(`{"n":${n},"t":${now()}`);
}

/** A filler payload (no stamp): jobs that only make a backlog. */
export function fillerPayload(): string {
  return padded(`{"filler":true`);
}
