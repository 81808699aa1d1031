/**
 * The server process: opens the store, starts the broker, serves HTTP (and the WebSocket
 * upgrade), and shuts down in order — stop accepting, stop pushing, answer what is in flight,
 * close sockets with 1001, checkpoint the WAL, close the database.
 *
 * @module
 */

import { dirname, resolve } from "node:path";
import { type Principal, TokenSet } from "./auth/tokens.ts";
import { Broker } from "./core/broker.ts";
import { Scheduler } from "./core/scheduler.ts";
import { type Clock, systemClock } from "./core/clock.ts";
import type { ServeConfig } from "./config/serve_config.ts";
import { DASHBOARD_ASSETS } from "./dashboard/assets.ts";
import { type Backups, createApi, refusedBackups } from "./http/api.ts";
import { eventStreamResponse } from "./http/event_stream.ts";
import type { HttpRequest } from "./http/http_request.ts";
import { LiveFeed } from "./observe/live_feed.ts";
import { EventLoopLag } from "./observe/event_loop_lag.ts";
import { createLogger, describeCause, type Logger } from "./observe/log.ts";
import { ServerMetrics } from "./observe/server_metrics.ts";
import { openStore, policyOf, redactUrl, type StoreFactory } from "./store/open_store.ts";
import { Connection } from "./ws/connection.ts";
import { upgradeToWebSocket } from "./ws/deno_socket.ts";
import { originAllowed } from "./http/origin.ts";
import { BodyBudget } from "./http/body_budget.ts";
import {
  DESCRIPTORS_PER_CONNECTION,
  type FrontDoor,
  openFrontDoor,
  RESERVED_DESCRIPTORS,
} from "./http/front_door.ts";
import { describeDescriptorLimit, descriptorLimit } from "./observe/descriptor_limit.ts";
import { openDirectServe } from "./http/direct_serve.ts";
import { toResponse } from "./http/respond.ts";
import { ClockJumpWatch } from "./observe/clock_jump.ts";
import { tokensFileWarning } from "./auth/tokens_file.ts";
import { TegamiError } from "./core/errors.ts";
import type { Store } from "./store/store.ts";
import { createSqsApi } from "./sqs/sqs_api.ts";
import { SqliteBackup } from "./store/sqlite/sqlite_backup.ts";

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
  /** The scheduler of recurring jobs (tests reach in to inspect). */
  readonly scheduler: Scheduler;
  /** The store. */
  readonly store: Store;
  /** Shuts down gracefully; resolves when the database is closed. */
  close(): Promise<void>;
  /** Same as {@linkcode RunningServer.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** What a `2xx` for a write promises on this store, for the `tegami started` line. */
function durabilityOf(store: Store, sync: ServeConfig["sync"]): string {
  if (!store.capabilities.localFiles) {
    return "answered after COMMIT; flushed as PostgreSQL's synchronous_commit says";
  }
  return sync === "full"
    ? "answered after the WAL fsync; survives power loss"
    : "answered after COMMIT without fsync; a power loss may lose the last commits";
}

/**
 * The backups `/v1/backup` takes: of the SQLite file, or refused with what to do instead on
 * PostgreSQL (docs/operations.md).
 */
function backupsOf(
  store: Store,
  config: ServeConfig,
  log: Logger,
): Backups & { close?: () => Promise<void> } {
  if (!store.capabilities.localFiles) {
    return refusedBackups(
      "Cannot back up: this server keeps its jobs in PostgreSQL; back the database up with " +
        "pg_dump (see docs/operations.md)",
    );
  }
  return new SqliteBackup({
    path: config.db,
    dir: config.backupDir ?? dirname(resolve(config.db)),
    onFinished: (status) => {
      if (status.state === "done") {
        log.info("Backup written", {
          path: status.path,
          bytes: status.bytes_written,
          took_ms: status.took_ms,
        });
      } else log.error("Backup failed", { path: status.path, cause: status.error });
    },
  });
}

/** A TLS certificate or key file's text; throws a one-line `Error` naming the file. */
async function readTlsFile(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    throw new Error(`Cannot load TLS file "${path}": ${(error as Error).message}`);
  }
}

/**
 * Throws as the bind would when the address is taken or cannot be had, or the TLS pair does not
 * load, so that a start that cannot listen leaves nothing on disk. The server binds for real only
 * after the store is open (its handler needs the store), so a port taken in that moment still
 * fails the start there. Port 0 is bound only to try the TLS pair.
 */
function checkCanListen(
  hostname: string,
  port: number,
  tls: { cert: string; key: string } | undefined,
): void {
  if (port === 0 && tls === undefined) return;
  try {
    (tls === undefined
      ? Deno.listen({ hostname, port })
      : Deno.listenTls({ hostname, port, ...tls }))
      .close();
  } catch (error) {
    throw new Error(`Cannot listen on ${hostname}:${port}: ${(error as Error).message}`);
  }
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
    const warning = tokensFileWarning(config.tokensFile, text);
    if (warning !== null) log.warn(warning, { file: config.tokensFile });
  }
  // Everything that can refuse the start without writing comes first: the TLS files, then the
  // port and the TLS pair. Only then does the store create its files (the database, its WAL, its lock).
  let tls: { cert: string; key: string } | undefined;
  if (config.tlsCert !== null && config.tlsKey !== null) {
    tls = { cert: await readTlsFile(config.tlsCert), key: await readTlsFile(config.tlsKey) };
  }
  checkCanListen(config.host, config.port, tls);
  const metrics = new ServerMetrics();
  const store = await (options.openStore ?? openStore)(config, {
    policy: policyOf(config),
    onCommit: (size, ms, error) => metrics.commit(size, ms, error !== null),
    onWalSync: (ms) => metrics.walSync(ms),
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
    maxQueues: config.maxQueues,
  });
  const scheduler = new Scheduler({
    store,
    broker,
    clock,
    onBackgroundError: (what, error) =>
      log.error(`Background ${what} failed`, { cause: describeCause(error) }),
    maxSchedules: config.maxSchedules,
    onTicks: (schedule, ticks, ids) => {
      metrics.scheduleJobs(ids.length);
      log.debug("Schedule ticked", {
        schedule: schedule.name,
        queue: schedule.queue,
        tick: new Date(ticks[ticks.length - 1]).toISOString(),
        ticks: ticks.length,
        id: ids[ids.length - 1],
      });
    },
  });
  let accepting = true;
  const connections = new Set<Connection>();
  const limits = { maxPayload: config.maxPayload, maxBatch: config.maxBatch };
  // Request bodies being read and large WebSocket messages being received share one budget.
  const memoryBudget = new BodyBudget(config.bodyBudget);
  const upgrade = (request: HttpRequest, principal: Principal | null): Response => {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      throw new TegamiError("validation_failed", "Cannot upgrade: expected a WebSocket handshake");
    }
    // The authority the request was judged by: an absolute-form target's own, else Host.
    if (
      !originAllowed(
        request.headers.get("origin"),
        new URL(request.url).host,
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
    const upgradeOptions = {
      pingIntervalMs: config.pingIntervalMs,
      maxMessage: config.maxBody,
      budget: memoryBudget,
      runtimeUpgrades: config.frontDoor === "off",
    };
    return upgradeToWebSocket(request, upgradeOptions, (socket, version) => {
      const connection: Connection = new Connection(socket, {
        broker,
        clock,
        limits,
        tokens,
        principal,
        maxFrame: config.maxBody,
        pauseBuffered: 1 << 20,
        maxBuffered: 32 << 20,
        authTimeoutMs: config.authTimeoutMs,
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
    // After the broker: ticks missed while no server ran are enqueued through it.
    await scheduler.start();
  } catch (error) {
    scheduler.close();
    broker.close();
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
    topQueues: config.metricsQueues,
  });
  feed.start();
  const lag = new EventLoopLag((ms) => metrics.eventLoopLag(ms));
  lag.start();
  const jumps = new ClockJumpWatch({
    wall: () => clock.now(),
    onJump: (deltaMs) => {
      metrics.clockJump();
      log.warn(
        "Wall clock jumped: lease and delay deadlines moved with it (see docs/reliability.md)",
        { jump_ms: deltaMs },
      );
    },
  });
  if (clock === systemClock) jumps.start();
  // Every client connection holds three descriptors (see front_door.ts): the limit is sized so
  // the accept path never runs out, whatever --max-connections says.
  const fdLimit = descriptorLimit();
  const fdRoom = fdLimit.limit === null
    ? Infinity
    : Math.max(1, Math.floor((fdLimit.limit - RESERVED_DESCRIPTORS) / DESCRIPTORS_PER_CONNECTION));
  const maxConnections = Math.min(config.maxConnections, fdRoom);
  let door: FrontDoor | null = null;
  const backups = backupsOf(store, config, log);
  const api = createApi({
    broker,
    scheduler,
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
        clientConnections: door?.connections ?? 0,
        topQueues: config.metricsQueues,
        now: clock.now(),
        files: store.fileSizes(),
        statements: store.commitStats().statements,
        schedules: await store.countSchedules(),
      }),
    onRequest: (route, status, ms) => metrics.request(route, status, ms),
    crossSite: {
      listenHost: config.host,
      allowedHosts: config.allowedHosts,
      allowedOrigins: config.allowedOrigins,
    },
    body: { timeoutMs: config.bodyTimeoutMs, budget: memoryBudget },
    backups,
  });
  // The Amazon SQS API shares the port: POST / and POST /ACCOUNT/QUEUE are its (docs/sqs.md).
  const sqs = config.sqs === "off" ? null : createSqsApi({
    broker,
    clock,
    identity: { account: config.sqsAccount, region: config.sqsRegion },
    defaultLeaseMs: config.leaseMs,
    maxPayload: config.maxPayload,
    maxMessageBytes: Math.min(1024 * 1024, config.maxPayload - 2),
    tokens,
    maxBody: config.maxBody,
    log,
    accepting: () => accepting,
    crossSite: {
      listenHost: config.host,
      allowedHosts: config.allowedHosts,
      allowedOrigins: config.allowedOrigins,
    },
    body: { timeoutMs: config.bodyTimeoutMs, budget: memoryBudget },
    onRequest: (route, status, ms) => metrics.request(route, status, ms),
  });
  const handler = sqs === null
    ? api
    : (request: HttpRequest) => sqs.matches(request) ? sqs.handle(request) : api(request);

  try {
    door = config.frontDoor === "off"
      ? openDirectServe({
        hostname: config.host,
        port: config.port,
        tls,
        handler: async (request) => toResponse(await handler(request)),
        log,
        onEvent: (event) => metrics.connectionEvent(event),
      })
      : await openFrontDoor({
        hostname: config.host,
        port: config.port,
        tls,
        handler,
        maxConnections,
        headerTimeoutMs: config.headerTimeoutMs,
        idleTimeoutMs: config.idleTimeoutMs,
        relayPaths: ["/v1/events"],
        log,
        onEvent: (event) => metrics.connectionEvent(event),
      });
  } catch (error) {
    feed.close();
    lag.stop();
    jumps.stop();
    scheduler.close();
    broker.close();
    sqs?.close();
    await backups.close?.();
    await store.close();
    throw new Error(
      `Cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`,
    );
  }
  const listening = door;
  const address = listening.addr;
  const scheme = config.tlsCert !== null ? "https" : "http";
  const host = address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname;
  const url = `${scheme}://${host}:${address.port}`;
  log.info("tegami started", {
    version: options.version ?? "dev",
    url,
    db: redactUrl(config.db),
    // --sync is SQLite's: PostgreSQL's own synchronous_commit decides when a COMMIT is durable.
    sync: store.capabilities.localFiles ? config.sync : undefined,
    durability: durabilityOf(store, config.sync),
    auth: tokens === null ? "off" : `${tokens.size} token${tokens.size === 1 ? "" : "s"}`,
    engine: store.engine,
    // The limit in force: --max-connections, lowered to what the descriptor limit allows.
    front_door: config.frontDoor,
    descriptor_limit: describeDescriptorLimit(fdLimit),
    max_connections: config.frontDoor === "on" ? maxConnections : null,
  });

  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      log.info("tegami stopping: no new requests, answering those in flight");
      accepting = false;
      scheduler.close();
      sqs?.close();
      broker.close();
      for (const connection of [...connections]) connection.shutdown();
      // Event streams never end by themselves: end them, or shutdown() would wait for ever.
      feed.close();
      lag.stop();
      jumps.stop();
      // Requests in flight get the grace period; then their connections are cut. Every write
      // already acknowledged is committed, and the store finishes the commits in flight.
      await listening.shutdown(config.shutdownGraceMs);
      await backups.close?.();
      await store.close();
      log.info("tegami stopped: database closed cleanly");
    })();
    return closing;
  };
  return {
    url,
    port: address.port,
    broker,
    scheduler,
    store,
    close,
    [Symbol.asyncDispose]: close,
  };
}
