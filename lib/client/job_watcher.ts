/**
 * Watching jobs for `TegamiClient.watch`: every watch of one client shares its WebSockets (the
 * `watch`, `progressed` and `ended` frames of docs/protocol.md). A connection carries up to
 * {@linkcode WATCHES_PER_CONNECTION} jobs, the server's limit; one opens when a watch finds none
 * with room, and closes once it watches nothing, so a process that watched a job can exit.
 *
 * @module
 */

import { errorFromWire, TegamiError } from "../core/errors.ts";
import { type JobEnd, type WatchOptions, webSocketFor } from "./flows.ts";

/** The most jobs one connection watches at once (docs/protocol.md, `watch`). */
export const WATCHES_PER_CONNECTION = 1000;

/** One caller's watch of one job. */
interface Watch {
  onProgress: ((progress: unknown, at: number) => void) | undefined;
  resolve: (end: JobEnd) => void;
  reject: (error: unknown) => void;
}

/** Watches jobs over WebSockets to one server, shared by every watch. */
export class JobWatcher {
  readonly #base: string;
  readonly #token: string | undefined;
  readonly #perConnection: number;
  readonly #lines = new Set<WatchLine>();

  /**
   * Watches on the server at `base`, authenticated with `token`; `perConnection` jobs at most on
   * one connection.
   */
  constructor(base: string, token: string | undefined, perConnection = WATCHES_PER_CONNECTION) {
    this.#base = base;
    this.#token = token;
    this.#perConnection = perConnection;
  }

  /** Connections open now (or opening). */
  get connections(): number {
    return this.#lines.size;
  }

  /**
   * Watches job `id`: resolves with how it ended (at once for a job that has already ended),
   * calling `onProgress` for each progress report meanwhile; rejects with the server's error
   * (`not_found` for an unknown job, or one deleted before its end could be read), when the
   * connection is lost, or with the signal's reason.
   */
  watch(id: number, options: WatchOptions = {}): Promise<JobEnd> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const wsUrl = this.#base.replace(/^http/, "ws") + "/v1/ws";
    const Socket = webSocketFor(wsUrl, options.WebSocket, "watch");
    return new Promise<JobEnd>((resolve, reject) => {
      const line = this.#lineFor(id, Socket, wsUrl);
      const onAbort = () => {
        line.remove(id, watch);
        reject(signal!.reason);
      };
      const watch: Watch = {
        onProgress: options.onProgress,
        resolve: (end) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(end);
        },
        reject: (error) => {
          signal?.removeEventListener("abort", onAbort);
          reject(error);
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      line.add(id, watch);
    });
  }

  /** The connection already watching `id`, else one with room, else a new one. */
  #lineFor(id: number, Socket: typeof WebSocket, wsUrl: string): WatchLine {
    let roomy: WatchLine | null = null;
    for (const line of this.#lines) {
      if (line.Socket !== Socket) continue;
      if (line.has(id)) return line;
      if (roomy === null && line.size < this.#perConnection) roomy = line;
    }
    if (roomy !== null) return roomy;
    const line = new WatchLine(Socket, wsUrl, this.#base, this.#token, () => {
      this.#lines.delete(line);
    });
    this.#lines.add(line);
    return line;
  }
}

/** One WebSocket and the jobs it watches. */
class WatchLine {
  readonly Socket: typeof WebSocket;
  readonly #socket: WebSocket;
  readonly #token: string | undefined;
  readonly #onGone: () => void;
  /** The watches of each job, by id. */
  readonly #jobs = new Map<number, Set<Watch>>();
  /** The job each `watch` frame not yet answered was about, by ref. */
  readonly #asked = new Map<number, number>();
  /** The refs of `unwatch` frames not yet answered. */
  readonly #dropped = new Set<number>();
  #open = false;
  #gone = false;
  #nextRef = 1;

  constructor(
    Socket: typeof WebSocket,
    wsUrl: string,
    base: string,
    token: string | undefined,
    onGone: () => void,
  ) {
    this.Socket = Socket;
    this.#token = token;
    this.#onGone = onGone;
    this.#socket = new Socket(wsUrl, "tegami.v2");
    this.#socket.onopen = () => this.#opened();
    this.#socket.onmessage = (event) => this.#heard(String(event.data));
    this.#socket.onerror = () => {}; // the close event follows
    this.#socket.onclose = () =>
      this.#end(new TegamiError("unavailable", `Lost the connection to ${base} while watching`));
  }

  /** Jobs watched. */
  get size(): number {
    return this.#jobs.size;
  }

  has(id: number): boolean {
    return this.#jobs.has(id);
  }

  add(id: number, watch: Watch): void {
    const watches = this.#jobs.get(id);
    if (watches !== undefined) {
      watches.add(watch);
      return;
    }
    this.#jobs.set(id, new Set([watch]));
    if (this.#open) this.#ask(id);
  }

  /** Forgets `watch`; the job is unwatched once nobody watches it, the socket once idle. */
  remove(id: number, watch: Watch): void {
    const watches = this.#jobs.get(id);
    if (watches === undefined || !watches.delete(watch) || watches.size > 0) return;
    this.#jobs.delete(id);
    if (this.#open && this.#jobs.size > 0) {
      const ref = this.#nextRef++;
      this.#dropped.add(ref);
      this.#socket.send(JSON.stringify({ op: "unwatch", id, ref }));
    }
    this.#closeIfIdle();
  }

  #opened(): void {
    this.#open = true;
    if (this.#token !== undefined) {
      this.#socket.send(JSON.stringify({ op: "auth", token: this.#token, ref: 0 }));
    }
    for (const id of this.#jobs.keys()) this.#ask(id);
    this.#closeIfIdle();
  }

  #ask(id: number): void {
    const ref = this.#nextRef++;
    this.#asked.set(ref, id);
    this.#socket.send(JSON.stringify({ op: "watch", id, ref }));
  }

  #heard(text: string): void {
    let frame: Record<string, unknown>;
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    const ref = frame.ref as number | undefined;
    switch (frame.op) {
      case "ok":
        if (ref !== undefined) this.#asked.delete(ref) || this.#dropped.delete(ref);
        return;
      case "error": {
        const error = errorFromWire(frame);
        // An unwatch refused changes nothing that is still watched.
        if (ref !== undefined && this.#dropped.delete(ref)) return;
        const id = ref === undefined ? undefined : this.#asked.get(ref);
        if (id === undefined) {
          // Not about one watch (the auth, the connection): every watch on it fails.
          this.#end(error);
          return;
        }
        this.#asked.delete(ref!);
        this.#settle(id, (watch) => watch.reject(error));
        return;
      }
      case "progressed":
        for (const watch of this.#jobs.get(frame.id as number) ?? []) {
          watch.onProgress?.(frame.progress, frame.at as number);
        }
        return;
      case "ended": {
        const { op: _op, ...end } = frame;
        this.#settle(frame.id as number, (watch) => watch.resolve(end as unknown as JobEnd));
        return;
      }
      case "gone": {
        const id = frame.id as number;
        const error = new TegamiError(
          "not_found",
          `Job ${id} is gone: how it ended cannot be read`,
        );
        this.#settle(id, (watch) => watch.reject(error));
        return;
      }
    }
  }

  /** Ends every watch of job `id` with `outcome`. */
  #settle(id: number, outcome: (watch: Watch) => void): void {
    const watches = this.#jobs.get(id);
    if (watches === undefined) return;
    this.#jobs.delete(id);
    for (const watch of watches) outcome(watch);
    this.#closeIfIdle();
  }

  #closeIfIdle(): void {
    if (this.#jobs.size > 0 || this.#gone) return;
    this.#gone = true;
    this.#onGone();
    try {
      this.#socket.close(1000);
    } catch {
      // Already closing.
    }
  }

  /** The connection is over: every watch still on it fails with `error`. */
  #end(error: unknown): void {
    if (!this.#gone) {
      this.#gone = true;
      this.#onGone();
      try {
        this.#socket.close(1000);
      } catch {
        // Already closing.
      }
    }
    const jobs = [...this.#jobs.values()];
    this.#jobs.clear();
    for (const watches of jobs) for (const watch of watches) watch.reject(error);
  }
}
