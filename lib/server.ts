/**
 * The server process: opens the store, starts the broker, serves HTTP (and the WebSocket
 * upgrade), and shuts down in order — stop accepting, stop pushing, answer what is in flight,
 * close sockets with 1001, checkpoint the WAL, close the database.
 *
 * @module
 */

import { type Principal, TokenSet } from "./auth/tokens.ts";
import { Broker } from "./core/broker.ts";
import { type Clock, systemClock } from "./core/clock.ts";
import type { ServeConfig } from "./config/serve_config.ts";
import { DASHBOARD_ASSETS } from "./dashboard/assets.ts";
import { createApi } from "./http/api.ts";
import { eventStreamResponse } from "./http/event_stream.ts";
import { LiveFeed } from "./observe/live_feed.ts";
import { EventLoopLag } from "./observe/event_loop_lag.ts";
import { createLogger, describeCause, type Logger } from "./observe/log.ts";
import { ServerMetrics } from "./observe/server_metrics.ts";
import { openStore, policyOf, redactUrl, type StoreFactory } from "./store/open_store.ts";
import { Connection } from "./ws/connection.ts";
import { upgradeToWebSocket } from "./ws/deno_socket.ts";
import { originAllowed } from "./http/origin.ts";
import { TegamiError } from "./core/errors.ts";
import { errorResponse } from "./http/respond.ts";
import type { Store } from "./store/store.ts";

/** Options of {@linkcode startServer}. */
export interface ServerOptions {
  /** The resolved configuration. */
  config: ServeConfig;
  /** The clock. @default systemClock */
  clock?: Clock;
  /** The log. @default a logger built from the config */
  log?: Logger;
  /** The program's version, for the startup line. @default "dev" */
  version?: string;
  /** Opens the store. @default the engine `config.db` names (`openStore`) */
  openStore?: StoreFactory;
}

/** A running server. */
export interface RunningServer {
  /** The base URL, e.g. `http://127.0.0.1:7700`. */
  readonly url: string;
  /** The bound port. */
  readonly port: number;
  /** The broker (tests reach in to inspect). */
  readonly broker: Broker;
  /** The store. */
  readonly store: Store;
  /** Shuts down gracefully; resolves when the database is closed. */
  close(): Promise<void>;
  /** Same as {@linkcode RunningServer.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts a server; throws a one-line `Error` when it cannot start. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const config = options.config;
  const clock = options.clock ?? systemClock;
  const log = options.log ??
    createLogger({ level: config.logLevel, format: config.logFormat });
  let tokens: TokenSet | null = null;
  if (config.tokensFile !== null) {
    let text: string;
    try {
      text = await Deno.readTextFile(config.tokensFile);
    } catch (error) {
      throw new Error(
        `Cannot load tokens file "${config.tokensFile}": ${(error as Error).message}`,
      );
    }
    tokens = TokenSet.parse(text);
  }
  const metrics = new ServerMetrics();
  const store = await (options.openStore ?? openStore)(config, {
    policy: policyOf(config),
    onCommit: (size, ms, error) => metrics.commit(size, ms, error !== null),
    onBackgroundError: (what, error) =>
      log.error(`Background ${what} failed`, { cause: describeCause(error) }),
  });
  const broker = new Broker({
    store,
    clock,
    retainDoneMs: config.retainDoneMs,
    onBackgroundError: (what, error) =>
      log.error(`Background ${what} failed`, { cause: describeCause(error) }),
    observer: metrics,
  });
  let accepting = true;
  const connections = new Set<Connection>();
  const limits = { maxPayload: config.maxPayload, maxBatch: config.maxBatch };
  const upgrade = (request: Request, principal: Principal | null): Response => {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      throw new TegamiError("validation_failed", "Cannot upgrade: expected a WebSocket handshake");
    }
    if (
      !originAllowed(
        request.headers.get("origin"),
        request.headers.get("host"),
        config.allowedOrigins,
      )
    ) {
      throw new TegamiError(
        "forbidden",
        "Cannot upgrade: the Origin is neither this server nor listed in --allowed-origins",
      );
    }
    if (!accepting) {
      throw new TegamiError("unavailable", "Cannot upgrade: the server is shutting down");
    }
    if (connections.size >= config.maxConnections) {
      return errorResponse(
        new TegamiError(
          "unavailable",
          `Cannot upgrade: ${config.maxConnections} connections is the limit`,
        ),
      );
    }
    return upgradeToWebSocket(request, config.pingIntervalMs, (socket, version) => {
      const connection: Connection = new Connection(socket, {
        broker,
        clock,
        limits,
        tokens,
        principal,
        maxFrame: config.maxBody,
        pauseBuffered: 1 << 20,
        maxBuffered: 32 << 20,
        log,
        version,
        onFinished: () => connections.delete(connection),
      });
      connections.add(connection);
      return connection;
    });
  };
  try {
    await broker.start();
  } catch (error) {
    await store.close();
    throw error;
  }
  const feed = new LiveFeed({
    clock,
    version: options.version,
    sources: {
      stats: () => broker.stats(),
      consumers: (queue) => broker.consumerCount(queue),
      totals: () => metrics.queueTotals(),
      connections: () => connections.size,
    },
    onError: (error) => log.error("Background live feed failed", { cause: describeCause(error) }),
  });
  feed.start();
  const lag = new EventLoopLag((ms) => metrics.eventLoopLag(ms));
  lag.start();
  const api = createApi({
    broker,
    clock,
    tokens,
    log,
    limits: { ...limits, maxBody: config.maxBody },
    upgrade,
    accepting: () => accepting,
    dashboard: DASHBOARD_ASSETS,
    events: (principal) => eventStreamResponse(feed, (queue) => principal.allowsQueue(queue)),
    metrics: async () =>
      metrics.render({
        queues: await broker.stats(),
        consumers: (q) => broker.consumerCount(q),
        connections: connections.size,
        now: clock.now(),
        files: store.fileSizes(),
        statements: store.commitStats().statements,
      }),
    onRequest: (route, status, ms) => metrics.request(route, status, ms),
  });

  let listening: Deno.HttpServer<Deno.NetAddr>;
  try {
    const tls = config.tlsCert !== null && config.tlsKey !== null
      ? {
        cert: await Deno.readTextFile(config.tlsCert),
        key: await Deno.readTextFile(config.tlsKey),
      }
      : {};
    listening = Deno.serve({
      hostname: config.host,
      port: config.port,
      onListen: () => {},
      ...tls,
    }, api);
  } catch (error) {
    feed.close();
    lag.stop();
    broker.close();
    await store.close();
    throw new Error(
      `Cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`,
    );
  }
  const address = listening.addr;
  const scheme = config.tlsCert !== null ? "https" : "http";
  const host = address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname;
  const url = `${scheme}://${host}:${address.port}`;
  log.info("tegami started", {
    version: options.version ?? "dev",
    url,
    db: redactUrl(config.db),
    sync: config.sync,
    auth: tokens === null ? "off" : `${tokens.size} tokens`,
    engine: store.engine,
  });

  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      log.info("tegami stopping: no new requests, answering those in flight");
      accepting = false;
      broker.close();
      for (const connection of [...connections]) connection.shutdown();
      // Event streams never end by themselves: end them, or shutdown() would wait for ever.
      feed.close();
      lag.stop();
      await listening.shutdown();
      await store.close();
      log.info("tegami stopped: database closed cleanly");
    })();
    return closing;
  };
  return {
    url,
    port: address.port,
    broker,
    store,
    close,
    [Symbol.asyncDispose]: close,
  };
}
