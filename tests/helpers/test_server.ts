/**
 * Test fixtures: a real server on port 0 with a temp SQLite file and a manual clock, as an
 * async disposable (`await using server = await startTestServer()`), plus a small JSON client.
 *
 * @module
 */

import { ManualClock, systemClock } from "../../lib/core/clock.ts";
import { resolveServeConfig, type ServeConfig } from "../../lib/config/serve_config.ts";
import { type Logger, silentLogger } from "../../lib/observe/log.ts";
import { type RunningServer, startServer } from "../../lib/server.ts";
import { checkHttpAnswer } from "./api_schemas.ts";

/** An answer: status, parsed JSON body (or text when not JSON), headers. */
export interface Answer {
  /** HTTP status. */
  status: number;
  // deno-lint-ignore no-explicit-any
  body: any;
  /** Response headers. */
  headers: Headers;
}

/** Options of {@linkcode startTestServer}. */
export interface TestServerOptions {
  /** Config fields to override (db and port are set by the fixture unless given). */
  config?: Partial<ServeConfig>;
  /** The clock. @default a new ManualClock */
  clock?: ManualClock;
  /** Run on the real clock instead (for clients with their own timers); `advance` then throws. */
  realTime?: boolean;
  /** A directory to use (kept on close); a new temp dir otherwise (removed on close). */
  dir?: string;
  /**
   * Entries of a tokens file (or its text), written to `tokens.json` in the server's directory
   * and served with; without them auth is off.
   */
  tokens?: readonly Record<string, unknown>[] | string;
  /** The log. @default silent */
  log?: Logger;
  /** The version for the startup line. @default "dev" */
  version?: string;
}

/** A running test server. */
export interface TestServer extends AsyncDisposable {
  /** Base URL. */
  url: string;
  /** The manual clock driving leases and delays. */
  clock: ManualClock;
  /** The temp directory holding the database. */
  dir: string;
  /** The database file. */
  dbPath: string;
  /** The server itself. */
  server: RunningServer;
  /** Sends a JSON request; `body` undefined sends no body. */
  request(method: string, path: string, body?: unknown, headers?: HeadersInit): Promise<Answer>;
  /** Moves the clock and lets the server react (timers fire, commits land). */
  advance(ms: number): Promise<void>;
  /** Stops the server (the directory stays until dispose). */
  stop(): Promise<void>;
}

/** Lets queued commits and dispatches run (a few macrotasks). */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

/** What `promise` resolves to, or `"timed out"` once `ms` of real time passed first. */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | "timed out"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    promise,
    new Promise<"timed out">((resolve) => timer = setTimeout(() => resolve("timed out"), ms)),
  ]);
  clearTimeout(timer);
  return outcome;
}

/** Stops the server; answers `"stopped"`, or `"hung"` if that took longer than `ms`. */
export async function stopWithin(server: TestServer, ms = 5000): Promise<"stopped" | "hung"> {
  return await within(server.stop(), ms) === "timed out" ? "hung" : "stopped";
}

/**
 * Sends a request to a server and reads the answer, which must agree with the OpenAPI document
 * (see `api_schemas.ts`): an undocumented status or a body that breaks its schema throws.
 */
export async function send(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers?: HeadersInit,
): Promise<Answer> {
  const init: RequestInit = { method, headers: new Headers(headers) };
  if (body !== undefined) {
    (init.headers as Headers).set("content-type", "application/json");
    init.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  return readAnswer(method, path, await fetch(url + path, init));
}

/**
 * Reads the response to `method path` into an {@linkcode Answer} (the body parsed as JSON, else
 * kept as text), checking it against the OpenAPI document as {@linkcode send} does.
 */
export async function readAnswer(
  method: string,
  path: string,
  response: Response,
): Promise<Answer> {
  const text = await response.text();
  checkHttpAnswer(method, path, response.status, response.headers.get("content-type"), text);
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

/** Starts a server on port 0 with a temp database and a manual clock. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? await Deno.makeTempDir({ prefix: "tegami-test-" });
  const dbPath = `${dir}/tegami.db`;
  const clock = options.clock ?? new ManualClock();
  let tokensFile: string | null = null;
  if (options.tokens !== undefined) {
    tokensFile = `${dir}/tokens.json`;
    const text = typeof options.tokens === "string"
      ? options.tokens
      : JSON.stringify(options.tokens);
    await Deno.writeTextFile(tokensFile, text);
  }
  const config: ServeConfig = {
    ...resolveServeConfig([], {}),
    db: dbPath,
    port: 0,
    tokensFile,
    ...options.config,
  };
  const server = await startServer({
    config,
    clock: options.realTime === true ? systemClock : clock,
    log: options.log ?? silentLogger,
    version: options.version,
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await server.close();
  };
  return {
    url: server.url,
    clock,
    dir,
    dbPath,
    server,
    request: (method, path, body, headers) => send(server.url, method, path, body, headers),
    advance: async (ms) => {
      if (options.realTime === true) throw new Error("advance() needs the manual clock");
      clock.advance(ms);
      await settle();
    },
    stop,
    [Symbol.asyncDispose]: async () => {
      await stop();
      if (ownDir) await Deno.remove(dir, { recursive: true });
    },
  };
}
