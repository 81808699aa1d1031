/**
 * Flows and waiting, for the SDK: the shapes of a flow's answers, the outcomes of a job's
 * prerequisites as a handler sees them, what a watch is told (`progressed` and `ended` frames, see
 * docs/protocol.md; job_watcher.ts watches), and the WebSocket class a connection uses. The flow
 * request's shape is producer.ts's.
 *
 * @module
 */

import { nodelayWebSocket } from "./deno_websocket.ts";
import { nodeWebSocket } from "./node_websocket.ts";

/** What a prerequisite's failure (dead or cancelled) does to the node that depends on it. */
export type OnFailure = "cancel" | "ignore" | "run";

/** The answer to creating a flow or adding nodes to one. */
export interface FlowCreated {
  /** The flow's id. */
  id: number;
  /** True when a flow with the same key was already stored and nothing was added. */
  deduplicated: boolean;
  /** Each node's job id, by ref. */
  jobs: Record<string, number>;
}

/** A flow as the server shows it (`GET /v1/flows/{id}`). */
export interface FlowInfo {
  /** Its id. */
  id: number;
  /** Its dedup key, or null. */
  key: string | null;
  /** When it was created. */
  created_at: number;
  /** When its last node ended, or null while any has not. */
  finished_at: number | null;
  /** Its nodes by state. */
  counts: Record<string, number>;
  /** Its nodes (absent in listings). */
  nodes?: {
    ref: string;
    id: number;
    queue: string;
    state: string;
    depends_on: { ref: string; on_failure: OnFailure }[];
  }[];
}

/** A prerequisite's outcome, as the handler of the job that waited for it sees it. */
export interface Prerequisite {
  /** Its ref. */
  ref: string;
  /** Its job id. */
  id: number;
  /** `done`, `dead` or `cancelled`. */
  state: string;
  /** Its ack's result (any JSON value), or null. */
  result: unknown;
  /** Its last error, or null. */
  lastError: string | null;
  /** True when the result was left out to keep the delivery within its cap (read the job). */
  resultOmitted: boolean;
}

/** The wire form of one outcome in a delivery. */
export interface OutcomeFrame {
  /** The prerequisite's ref. */
  ref: string;
  /** Its job id. */
  id: number;
  /** The state it ended in. */
  state: string;
  /** Its ack's result, or null. */
  result: unknown;
  /** Its last error, or null. */
  last_error: string | null;
  /** True when its result was left out to keep the delivery within its cap. */
  result_omitted: boolean;
}

/** The outcomes of a delivery's `prerequisites`, as handlers see them. */
export function prerequisitesOf(frames: readonly OutcomeFrame[] | undefined): Prerequisite[] {
  return (frames ?? []).map((o) => ({
    ref: o.ref,
    id: o.id,
    state: o.state,
    result: o.result,
    lastError: o.last_error,
    resultOmitted: o.result_omitted,
  }));
}

/** Options of {@linkcode watchJob}. */
export interface WatchOptions {
  /** Called with each progress report (the JSON value reported) as the job makes it. */
  onProgress?: (progress: unknown, at: number) => void;
  /** Stops watching (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
  /** A WebSocket class to use instead of the runtime's. */
  WebSocket?: typeof WebSocket;
}

/** How a watched job ended (the `ended` frame). */
export interface JobEnd {
  /** The job. */
  id: number;
  /** Its queue. */
  queue: string;
  /** `done`, `dead` or `cancelled`. */
  state: string;
  /** Its ack's result, or null. */
  result: unknown;
  /** Its last error, or null. */
  last_error: string | null;
  /** Deliveries made. */
  attempts: number;
  /** When it ended. */
  finished_at: number;
}

/**
 * The WebSocket class for `wsUrl`: the given one, else plain ws:// through a client that turns
 * Nagle off in Deno (deno_websocket.ts) or one on node:net on Node (node_websocket.ts), else the
 * runtime's. Throws, saying what could not be done (`what`), when there is none.
 */
export function webSocketFor(
  wsUrl: string,
  given: typeof WebSocket | undefined,
  what: string,
): typeof WebSocket {
  const Socket = given ??
    (wsUrl.startsWith("ws:") ? nodelayWebSocket() ?? nodeWebSocket() : null) ??
    globalThis.WebSocket;
  if (typeof Socket !== "function") {
    // Node 20 has the standard WebSocket only behind a flag (ws:// needs none: see above); say
    // so rather than fail obscurely.
    throw new TypeError(
      `Cannot ${what}: this runtime has no WebSocket (on Node 20, run node with ` +
        "--experimental-websocket for wss://; Node 22 and later have it), or pass " +
        "options.WebSocket",
    );
  }
  return Socket;
}
