/**
 * The HTTP API v1: routes, authorization, and the translation between requests and broker
 * calls. Runtime-neutral: it maps a request to an answer (a `Response`, or a JSON answer that
 * `toResponse` turns into one), so tests can call it directly.
 *
 * @module
 */

import { OPERATIONS, requireAccess } from "../auth/operations.ts";
import {
  bearerToken,
  OPEN_ACCESS,
  type Principal,
  requireQueue,
  type TokenSet,
} from "../auth/tokens.ts";
import type { Broker } from "../core/broker.ts";
import type { Scheduler } from "../core/scheduler.ts";
import { parseSchedule, scheduleJson, scheduleName } from "../api/schedules.ts";
import type { Clock } from "../core/clock.ts";
import { invalid, jobNotFound, shuttingDown, TegamiError, toTegamiError } from "../core/errors.ts";
import { deliveryJson, type Job, jobJson } from "../core/job.ts";
import { describeCause, type Logger } from "../observe/log.ts";
import {
  applyTraceHeaders,
  enqueueAnswer,
  pageByName,
  parseAck,
  parseCheckpoint,
  parseDeadQuery,
  parseEmpty,
  parseEnqueue,
  parseExtend,
  parseJobsQuery,
  parseLease,
  parseNack,
  parseNamePage,
  parseProgress,
  parseRequeue,
  parseWaitQuery,
  pathJobId,
  queueName,
  type RequestLimits,
} from "../api/requests.ts";
import type { Asset } from "../dashboard/assets.ts";
import type { BackupStatus } from "../store/sqlite/sqlite_backup.ts";
import { statsView, waitedEnqueueJson } from "../api/views.ts";
import { hasEnded } from "../core/flow.ts";
import { flowRoutes } from "./flow_routes.ts";
import { groupRoutes } from "./group_routes.ts";
import type { Context, Route } from "./route.ts";
import { type BulkTask, bulkTaskId, parseBulkRequest } from "../core/bulk_actions.ts";
import { parseQueueSettings, settingsView } from "../core/queue_settings.ts";
import { type BodyOptions, type JsonBody, readJsonBody } from "./body.ts";
import { checkCrossSite, type CrossSiteRules } from "./cross_site.ts";
import openapi from "./openapi.json" with { type: "json" };
import asyncapi from "../ws/asyncapi.json" with { type: "json" };
import { type Answer, errorResponse, json, jsonText } from "./respond.ts";
import type { HttpRequest } from "./http_request.ts";

/** What the API needs from the server around it. */
export interface ApiOptions {
  /** The broker. */
  broker: Broker;
  /** The scheduler, for `/v1/schedules…`; without it those routes answer 404. */
  scheduler?: Scheduler;
  /** The clock. */
  clock: Clock;
  /** Request limits. */
  limits: RequestLimits & { maxBody: number };
  /** Tokens, or null when auth is off. */
  tokens: TokenSet | null;
  /** The log. */
  log: Logger;
  /** False while shutting down. */
  accepting: () => boolean;
  /** Prometheus text for `/metrics`. */
  metrics: () => Promise<string>;
  /** The dashboard's files, each served at its path (`/` is the page). */
  dashboard: readonly Asset[];
  /** The live feed as an event stream for `GET /v1/events`, for a caller seeing some queues. */
  events?: (principal: Principal) => Response;
  /** Handles `GET /v1/ws` once the caller is authenticated (or auth is left to the first frame). */
  upgrade?: (request: HttpRequest, principal: Principal | null) => Response;
  /** Sees every answered request (route pattern, status, duration). */
  onRequest?: (route: string, status: number, ms: number) => void;
  /** The Host and Origin rules applied when auth is off. @default none */
  crossSite?: CrossSiteRules;
  /** Time limit and memory budget for request bodies. @default none */
  body?: Pick<BodyOptions, "timeoutMs" | "budget">;
  /** Backups of the database, for `/v1/backup`. @default none: those routes answer `conflict` */
  backups?: Backups;
}

/** Backups of the database into a file on the server's host, one at a time. */
export interface Backups {
  /** Starts a backup into `path` (inside the backup directory); answers at once, with its status. */
  start(path: string): BackupStatus;
  /** The running or last backup, or null if none was started. */
  status(): Promise<BackupStatus | null>;
}

/** The {@linkcode Backups} of a server that cannot take them: every call fails with `reason`. */
export function refusedBackups(reason: string): Backups {
  const refuse = (): never => {
    throw new TegamiError("conflict", reason);
  };
  return { start: refuse, status: () => Promise.resolve().then(refuse) };
}

/** Makes the request handler of the HTTP API. */
export function createApi(options: ApiOptions): (request: HttpRequest) => Promise<Answer> {
  const { broker, clock, limits, tokens, log } = options;

  const body = async (ctx: Context): Promise<unknown> => (await bodyText(ctx)).value;

  const bodyText = async (ctx: Context): Promise<JsonBody> => {
    try {
      return await readJsonBody(ctx.request, limits.maxBody, {
        ...options.body,
        // Without tokens, a body-less form POST must not pass the Content-Type rule either.
        strictType: tokens === null,
      });
    } catch (error) {
      // Shutdown stops the reading of bodies still arriving: that caller should retry, not fix
      // its request.
      if (!options.accepting()) throw shuttingDown(error);
      throw error;
    }
  };

  /** Checks the caller may act on the queue of job `id` (which must exist). */
  const jobAccess = async (ctx: Context, id: number): Promise<void> => {
    if (tokens === null) return;
    const queue = await broker.queueOf(id);
    if (queue === null) throw jobNotFound(id);
    requireQueue(ctx.principal, queue);
  };

  const scheduler = (ctx: Context): Scheduler => {
    if (options.scheduler === undefined) throw notFound(ctx.request, ctx.url);
    return options.scheduler;
  };

  /** The schedule a path names, after checking the caller may see its queue. */
  const scheduleAccess = async (ctx: Context) => {
    const schedule = await scheduler(ctx).get(scheduleName(ctx.params[0]));
    requireQueue(ctx.principal, schedule.queue);
    return schedule;
  };

  /** The task, if the caller may see its queue. */
  const visibleTask = (ctx: Context, task: BulkTask): BulkTask => {
    requireQueue(ctx.principal, task.queue);
    return task;
  };

  const logBulkEnd = (task: Readonly<BulkTask>, cause: unknown): void => {
    const fields = {
      task: task.id,
      queue: task.queue,
      action: task.action,
      dry_run: task.dry_run,
      state: task.state,
      examined: task.examined,
      matched: task.matched,
      done: task.done,
      skipped: task.skipped,
      by: task.by,
    };
    if (task.state === "failed") {
      log.error("Bulk action failed", { ...fields, error: describeCause(cause) });
    } else log.info("Bulk action ended", fields);
  };

  const backups = options.backups ??
    refusedBackups("Cannot back up: this server takes no backups");

  /** Throws `forbidden` for a token limited to some queues: a backup holds every queue. */
  const requireEveryQueue = (ctx: Context, action: string): void => {
    if (ctx.principal.limited) {
      throw new TegamiError(
        "forbidden",
        `Cannot ${action} with token "${ctx.principal.name}": it is limited to some queues`,
      );
    }
  };

  // The API documents, embedded by the imports (a compiled binary carries them), as sent.
  const openapiText = JSON.stringify(openapi);
  const asyncapiText = JSON.stringify(asyncapi);

  const table: Route[] = [
    {
      method: "POST",
      path: ["v1", "queues", ":queue", "jobs"],
      access: OPERATIONS.enqueue,
      query: true,
      handle: async (ctx) => {
        const queue = ctx.params[0];
        const waitMs = parseWaitQuery(ctx.url.searchParams);
        const { value, text } = await bodyText(ctx);
        const request = parseEnqueue(value, limits, clock.now(), text);
        const headers = ctx.request.headers;
        applyTraceHeaders(request, headers.get("traceparent"), headers.get("tracestate"));
        const out = request.jobs.length === 0 ? [] : await broker.enqueue(queue, request.jobs);
        const status = out.some((e) => !e.deduplicated) ? 201 : 200;
        const answer = enqueueAnswer(request, out);
        if (waitMs === 0 || out.length === 0) return json(status, answer);
        // Every job of the request waits out the same time: the answer comes when the last has
        // ended, or when the time is up.
        const ids = [...new Set(out.map((e) => e.id))];
        const ended = await Promise.all(
          ids.map((id) => broker.waitForEnd(id, waitMs, ctx.request.signal)),
        );
        const jobs = new Map<number, Job | null>(ids.map((id, i) => [id, ended[i]]));
        return jsonText(status, waitedEnqueueJson(answer, jobs));
      },
    },
    {
      method: "POST",
      path: ["v1", "queues", ":queue", "leases"],
      access: OPERATIONS.lease,
      handle: async (ctx) => {
        const queue = ctx.params[0];
        const req = parseLease(await body(ctx));
        const signal = ctx.request.signal;
        const jobs = await broker.lease(queue, req.max, req.wait_ms, req.lease_ms, signal);
        if (signal.aborted && jobs.length > 0) {
          // The caller left while we waited: give the leases back instead of letting them expire.
          await broker.release(
            jobs.map((d) => ({ id: d.job.id, token: d.lease.token, undelivered: true })),
          );
          return json(200, { jobs: [] });
        }
        return jsonText(200, `{"jobs":[${jobs.map(deliveryJson).join(",")}]}`);
      },
    },
    {
      method: "POST",
      path: ["v1", "jobs", ":id", "ack"],
      access: OPERATIONS.settle,
      handle: async (ctx) => {
        const id = pathJobId(ctx.params[0]);
        const req = parseAck(await body(ctx), limits);
        await jobAccess(ctx, id);
        await broker.ack(id, req.token, req.result);
        return json(200, { id, state: "done" });
      },
    },
    {
      method: "POST",
      path: ["v1", "jobs", ":id", "nack"],
      access: OPERATIONS.settle,
      handle: async (ctx) => {
        const id = pathJobId(ctx.params[0]);
        const req = parseNack(await body(ctx));
        await jobAccess(ctx, id);
        const out = await broker.nack(id, req.token, req);
        return json(200, { id, state: out.state, run_at: out.run_at });
      },
    },
    {
      method: "POST",
      path: ["v1", "jobs", ":id", "extend"],
      access: OPERATIONS.settle,
      handle: async (ctx) => {
        const id = pathJobId(ctx.params[0]);
        const req = parseExtend(await body(ctx));
        await jobAccess(ctx, id);
        return json(200, await broker.extend(id, req.token, req.lease_ms));
      },
    },
    {
      method: "POST",
      path: ["v1", "jobs", ":id", "checkpoint"],
      access: OPERATIONS.settle,
      handle: async (ctx) => {
        const id = pathJobId(ctx.params[0]);
        const req = parseCheckpoint(await body(ctx), limits);
        await jobAccess(ctx, id);
        return json(200, await broker.checkpoint(id, req.token, req.data));
      },
    },
    {
      method: "POST",
      path: ["v1", "jobs", ":id", "progress"],
      access: OPERATIONS.settle,
      handle: async (ctx) => {
        const id = pathJobId(ctx.params[0]);
        const req = parseProgress(await body(ctx));
        await jobAccess(ctx, id);
        return json(200, await broker.progress(id, req.token, req.progress));
      },
    },
    {
      method: "GET",
      path: ["v1", "jobs", ":id"],
      access: OPERATIONS.readJob,
      query: true,
      handle: async (ctx) => {
        const id = pathJobId(ctx.params[0]);
        const waitMs = parseWaitQuery(ctx.url.searchParams);
        let job = await broker.get(id);
        if (job === null) throw jobNotFound(id);
        requireQueue(ctx.principal, job.queue);
        if (waitMs > 0 && !hasEnded(job.state)) {
          job = await broker.waitForEnd(id, waitMs, ctx.request.signal);
          if (job === null) throw jobNotFound(id);
        }
        return jsonText(200, jobJson(job));
      },
    },
    {
      method: "DELETE",
      path: ["v1", "jobs", ":id"],
      access: OPERATIONS.cancelJob,
      handle: async (ctx) => {
        const id = pathJobId(ctx.params[0]);
        await jobAccess(ctx, id);
        const out = await broker.cancel(id);
        log.info(out.removed ? "Job removed" : "Job cancelled", {
          id,
          queue: out.queue,
          state: out.state,
          by: ctx.principal.name,
        });
        return json(200, { id, state: out.state, removed: out.removed });
      },
    },
    ...flowRoutes({ broker, clock, limits, log, bodyText, jobAccess, requireEveryQueue }),
    {
      method: "GET",
      path: ["v1", "queues"],
      access: OPERATIONS.readQueues,
      query: true,
      handle: async (ctx) => {
        const page = parseNamePage(ctx.url.searchParams, queueName);
        const now = clock.now();
        const all = await broker.stats();
        const visible = all.filter((s) => ctx.principal.allowsQueue(s.name));
        const { entries, nextAfter } = pageByName(visible, page, (s) => s.name);
        return json(200, {
          queues: entries.map((s) => statsView(s, now, broker.consumerCount(s.name))),
          next_after: nextAfter,
        });
      },
    },
    {
      method: "GET",
      path: ["v1", "queues", ":queue"],
      access: OPERATIONS.readQueues,
      handle: async (ctx) => {
        const [stats] = await broker.stats(ctx.params[0]);
        return json(200, statsView(stats, clock.now(), broker.consumerCount(stats.name)));
      },
    },
    ...([["pause", true], ["resume", false]] as const).map(([action, paused]): Route => ({
      method: "POST",
      path: ["v1", "queues", ":queue", action],
      access: OPERATIONS.pauseQueue,
      handle: async (ctx) => {
        parseEmpty(await body(ctx));
        await broker.setPaused(ctx.params[0], paused);
        log.info(paused ? "Queue paused" : "Queue resumed", {
          queue: ctx.params[0],
          by: ctx.principal.name,
        });
        return json(200, { name: ctx.params[0], paused });
      },
    })),
    {
      method: "GET",
      path: ["v1", "queues", ":queue", "settings"],
      access: OPERATIONS.readQueues,
      handle: async (ctx) => json(200, settingsView(await broker.settings(ctx.params[0]))),
    },
    {
      method: "PUT",
      path: ["v1", "queues", ":queue", "settings"],
      access: OPERATIONS.queueSettings,
      handle: async (ctx) => {
        const settings = parseQueueSettings(await body(ctx));
        const stored = settingsView(await broker.putSettings(ctx.params[0], settings));
        log.info("Queue settings changed", {
          queue: ctx.params[0],
          settings: JSON.stringify(stored),
          by: ctx.principal.name,
        });
        return json(200, stored);
      },
    },
    ...groupRoutes({ broker, log, body }),
    {
      method: "GET",
      path: ["v1", "queues", ":queue", "dead"],
      access: OPERATIONS.deadLetters,
      query: true,
      handle: async (ctx) => {
        const { limit, after } = parseDeadQuery(ctx.url.searchParams);
        const jobs = await broker.listDead(ctx.params[0], limit, after);
        const next = jobs.length === limit ? jobs[jobs.length - 1].id : null;
        return jsonText(200, `{"jobs":[${jobs.map(jobJson).join(",")}],"next_after":${next}}`);
      },
    },
    {
      method: "GET",
      path: ["v1", "queues", ":queue", "jobs"],
      access: OPERATIONS.browseJobs,
      query: true,
      handle: async (ctx) => {
        const page = parseJobsQuery(ctx.url.searchParams);
        const jobs = await broker.listJobs(ctx.params[0], page);
        const next = jobs.length === page.limit ? jobs[jobs.length - 1].id : null;
        return jsonText(200, `{"jobs":[${jobs.map(jobJson).join(",")}],"next_after":${next}}`);
      },
    },
    {
      method: "POST",
      path: ["v1", "jobs", ":id", "run"],
      access: OPERATIONS.runJob,
      handle: async (ctx) => {
        const id = pathJobId(ctx.params[0]);
        parseEmpty(await body(ctx));
        await jobAccess(ctx, id);
        const out = await broker.runNow(id);
        log.info("Job run now", { id, queue: out.queue, by: ctx.principal.name });
        return json(200, { id, state: out.state, run_at: out.run_at });
      },
    },
    {
      method: "POST",
      path: ["v1", "queues", ":queue", "dead", "requeue"],
      access: OPERATIONS.deadLetters,
      handle: async (ctx) => {
        const { ids } = parseRequeue(await body(ctx));
        const requeued = await broker.requeueDead(ctx.params[0], ids);
        log.info("Dead letters requeued", {
          queue: ctx.params[0],
          requeued,
          asked: ids === null ? "all" : ids.length,
          by: ctx.principal.name,
        });
        return json(200, { requeued });
      },
    },
    {
      method: "POST",
      path: ["v1", "queues", ":queue", "bulk"],
      access: OPERATIONS.bulkActions,
      handle: async (ctx) => {
        const request = parseBulkRequest(ctx.params[0], await body(ctx));
        const by = ctx.principal.name;
        const task = broker.bulk.start({ ...request, by, onEnd: logBulkEnd });
        log.info("Bulk action started", {
          task: task.id,
          queue: task.queue,
          action: task.action,
          dry_run: task.dry_run,
          filter: JSON.stringify(task.filter),
          by,
        });
        return json(202, task);
      },
    },
    {
      method: "GET",
      path: ["v1", "bulk"],
      access: OPERATIONS.bulkActions,
      handle: (ctx) =>
        json(200, {
          tasks: broker.bulk.list().filter((t) => ctx.principal.allowsQueue(t.queue)),
        }),
    },
    {
      method: "GET",
      path: ["v1", "bulk", ":id"],
      access: OPERATIONS.bulkActions,
      handle: (ctx) => json(200, visibleTask(ctx, broker.bulk.get(bulkTaskId(ctx.params[0])))),
    },
    {
      method: "DELETE",
      path: ["v1", "bulk", ":id"],
      access: OPERATIONS.bulkActions,
      handle: (ctx) => {
        const id = bulkTaskId(ctx.params[0]);
        visibleTask(ctx, broker.bulk.get(id));
        const task = broker.bulk.cancel(id, ctx.principal.name);
        log.info("Bulk action cancelled", { task: id, by: ctx.principal.name });
        return json(200, task);
      },
    },
    {
      method: "GET",
      path: ["v1", "schedules"],
      access: OPERATIONS.readSchedules,
      query: true,
      handle: async (ctx) => {
        const page = parseNamePage(ctx.url.searchParams, scheduleName);
        const all = await scheduler(ctx).list();
        const visible = all.filter((s) => ctx.principal.allowsQueue(s.queue));
        const { entries, nextAfter } = pageByName(visible, page, (s) => s.name);
        return jsonText(
          200,
          `{"schedules":[${entries.map(scheduleJson).join(",")}],"next_after":${
            JSON.stringify(nextAfter)
          }}`,
        );
      },
    },
    {
      method: "GET",
      path: ["v1", "schedules", ":name"],
      access: OPERATIONS.readSchedules,
      handle: async (ctx) => jsonText(200, scheduleJson(await scheduleAccess(ctx))),
    },
    {
      method: "PUT",
      path: ["v1", "schedules", ":name"],
      access: OPERATIONS.manageSchedules,
      handle: async (ctx) => {
        const name = scheduleName(ctx.params[0]);
        const { value, text } = await bodyText(ctx);
        const definition = parseSchedule(name, value, limits, clock.now(), text);
        requireQueue(ctx.principal, definition.queue);
        if (ctx.principal.limited) {
          // Replacing may move a schedule between queues: the caller must hold the old one too.
          const old = await scheduler(ctx).find(name);
          if (old !== null) requireQueue(ctx.principal, old.queue);
        }
        // Its ticks would create the queue: refused now rather than failing at every tick.
        broker.requireQueueRoom(definition.queue);
        const { schedule, created } = await scheduler(ctx).put(definition);
        log.info(created ? "Schedule created" : "Schedule replaced", {
          schedule: name,
          queue: schedule.queue,
          cron: schedule.cron,
          timezone: schedule.timezone,
          by: ctx.principal.name,
        });
        return jsonText(created ? 201 : 200, scheduleJson(schedule));
      },
    },
    {
      method: "DELETE",
      path: ["v1", "schedules", ":name"],
      access: OPERATIONS.manageSchedules,
      handle: async (ctx) => {
        const schedule = await scheduleAccess(ctx);
        await scheduler(ctx).delete(schedule.name);
        log.info("Schedule deleted", { schedule: schedule.name, by: ctx.principal.name });
        return json(200, { name: schedule.name, deleted: true });
      },
    },
    ...([["pause", true], ["resume", false]] as const).map(([action, paused]): Route => ({
      method: "POST",
      path: ["v1", "schedules", ":name", action],
      access: OPERATIONS.manageSchedules,
      handle: async (ctx) => {
        parseEmpty(await body(ctx));
        const current = await scheduleAccess(ctx);
        const schedule = await scheduler(ctx).setPaused(current.name, paused);
        log.info(paused ? "Schedule paused" : "Schedule resumed", {
          schedule: schedule.name,
          by: ctx.principal.name,
        });
        return jsonText(200, scheduleJson(schedule));
      },
    })),
    {
      method: "GET",
      path: ["v1", "events"],
      access: OPERATIONS.readQueues,
      handle: (ctx) => {
        if (options.events === undefined) throw notFound(ctx.request, ctx.url);
        return options.events(ctx.principal);
      },
    },
    {
      method: "POST",
      path: ["v1", "backup"],
      access: OPERATIONS.backup,
      handle: async (ctx) => {
        const path = parseBackupPath(await body(ctx));
        requireEveryQueue(ctx, "back up the database");
        const status = backups.start(path);
        log.info("Backup started", { path, by: ctx.principal.name });
        return json(202, status);
      },
    },
    {
      method: "GET",
      path: ["v1", "backup"],
      access: OPERATIONS.backup,
      handle: async (ctx) => {
        requireEveryQueue(ctx, "read the backup");
        const status = await backups.status();
        if (status === null) {
          throw new TegamiError("not_found", "Cannot find a backup: none was started");
        }
        return json(200, status);
      },
    },
    {
      method: "GET",
      path: ["healthz"],
      access: OPERATIONS.open,
      handle: () => json(200, { status: "ok" }),
    },
    {
      method: "GET",
      path: ["readyz"],
      access: OPERATIONS.open,
      handle: async () => {
        if (!options.accepting()) {
          throw new TegamiError("unavailable", "Not ready: the server is shutting down");
        }
        try {
          await broker.probeWritable();
        } catch (error) {
          throw new TegamiError("unavailable", "Not ready: the database does not take writes", {
            cause: error,
          });
        }
        return json(200, { status: "ready" });
      },
    },
    {
      method: "GET",
      path: ["metrics"],
      access: OPERATIONS.metrics,
      handle: async (ctx) => {
        // The metrics name and count every queue; GET /v1/queues hides the others from a token
        // limited to some queues, so /metrics must not show them either.
        if (ctx.principal.limited) {
          throw new TegamiError(
            "forbidden",
            `Cannot read the metrics with token "${ctx.principal.name}": it is limited to some queues`,
          );
        }
        return new Response(await options.metrics(), {
          headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
        });
      },
    },
    {
      method: "GET",
      path: ["openapi.json"],
      access: OPERATIONS.open,
      handle: () => jsonText(200, openapiText),
    },
    {
      method: "GET",
      path: ["asyncapi.json"],
      access: OPERATIONS.open,
      handle: () => jsonText(200, asyncapiText),
    },
    ...options.dashboard.map((asset): Route => ({
      method: "GET",
      path: asset.path.split("/").filter((part) => part !== ""),
      access: OPERATIONS.open,
      handle: () =>
        new Response(asset.body, {
          headers: {
            "content-type": asset.contentType,
            // Scripts and styles only from this server, as files: nothing inline runs.
            "content-security-policy": "default-src 'self'",
            "x-content-type-options": "nosniff",
          },
        }),
    })),
  ];
  // What each request would otherwise work out again: the metrics label, whether a queue is named.
  const routes = table.map((r) => ({
    ...r,
    pattern: "/" + r.path.join("/"),
    namesQueue: r.path.includes(":queue"),
  }));

  const authenticate = (request: HttpRequest): Principal | null => {
    if (tokens === null) return OPEN_ACCESS;
    const token = bearerToken(request.headers.get("authorization"));
    return token === null ? null : tokens.authenticate(token);
  };

  const route = async (
    request: HttpRequest,
    url: URL,
    seen: { pattern: string },
  ): Promise<Answer> => {
    const segments = url.pathname.split("/").filter((s) => s !== "");
    // HEAD is GET without the body (RFC 9110 §9.3.2): the same route, status and fields.
    const method = request.method === "HEAD" ? "GET" : request.method;
    if (
      method === "GET" && segments.length === 2 && segments[0] === "v1" && segments[1] === "ws"
    ) {
      if (options.upgrade === undefined) throw notFound(request, url);
      if (request.method === "HEAD") {
        seen.pattern = "/v1/ws";
        throw new TegamiError(
          "not_found",
          "No route for HEAD /v1/ws: a WebSocket handshake is a GET",
        );
      }
      // With auth on, a browser may authenticate with its first frame instead of a header.
      const principal = request.headers.has("authorization") ? authenticate(request) : null;
      if (tokens !== null && request.headers.has("authorization") && principal === null) {
        throw unauthorized();
      }
      seen.pattern = "/v1/ws";
      return options.upgrade(request, tokens === null ? OPEN_ACCESS : principal);
    }
    let pathMatched = false;
    for (const r of routes) {
      const matched = match(r.path, segments);
      if (matched === null) continue;
      pathMatched = true;
      if (r.method !== method) continue;
      seen.pattern = r.pattern;
      if (!options.accepting() && r.access !== "open") throw shuttingDown();
      let principal = OPEN_ACCESS;
      if (r.access !== "open") {
        const found = authenticate(request);
        if (found === null) throw unauthorized();
        principal = found;
        requireAccess(principal, r.access);
      }
      const params = decoded(r.path, matched);
      if (r.namesQueue) {
        const queue = queueName(params[0]);
        requireQueue(principal, queue);
      }
      // Most requests have no query: reading `search` spares making their URLSearchParams.
      if (r.query === undefined && r.path[0] === "v1" && url.search !== "") {
        for (const name of url.searchParams.keys()) throw invalid(name, "unknown query parameter");
      }
      return await r.handle({ request, url, principal, params });
    }
    throw pathMatched
      ? new TegamiError("not_found", `No route for ${request.method} ${url.pathname}: wrong method`)
      : notFound(request, url);
  };

  return async (request: HttpRequest): Promise<Answer> => {
    const started = performance.now();
    const seen = { pattern: "unmatched" };
    let url: URL | null = null;
    let response: Answer;
    try {
      url = requestUrl(request);
      if (tokens === null && options.crossSite !== undefined) {
        checkCrossSite(request, options.crossSite, url);
      }
      response = await route(request, url, seen);
      if (request.method === "HEAD") response = bodiless(response);
    } catch (thrown) {
      const error = toTegamiError(thrown);
      if (error.status >= 500) {
        log.error("Request failed", {
          method: request.method,
          path: url?.pathname ?? "?",
          code: error.code,
          cause: describeCause(error.cause ?? thrown),
        });
      }
      response = errorResponse(error);
      if (error.code === "unauthorized") response.headers.set("www-authenticate", "Bearer");
    }
    options.onRequest?.(seen.pattern, response.status, performance.now() - started);
    return response;
  };
}

/**
 * The answer to a HEAD: the GET's, whose body the server that writes it leaves out (`Deno.serve`,
 * which answers every HEAD, keeps its `content-length`). A stream's body is cancelled here
 * instead: the event stream would otherwise stay subscribed with nobody to read it.
 */
function bodiless(answer: Answer): Answer {
  if (!(answer instanceof Response) || answer.body === null || !isStream(answer)) return answer;
  answer.body.cancel().catch(() => {});
  return new Response(null, { status: answer.status, headers: answer.headers });
}

/** True for a streamed answer (the event stream), whose end is not known when it starts. */
function isStream(answer: Response): boolean {
  return answer.headers.get("content-type")?.startsWith("text/event-stream") ?? false;
}

/**
 * The parameters of a path that has the pattern's shape, or null. A parameter segment that is
 * not valid percent-encoding (`%zz`) still matches, as undefined: the route is the right one and
 * the caller's parameter is malformed (400), which the router reports once the method matches.
 */
function match(pattern: string[], segments: string[]): (string | undefined)[] | null {
  if (pattern.length !== segments.length) return null;
  const params: (string | undefined)[] = [];
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i].startsWith(":")) {
      let value: string | undefined;
      try {
        value = decodeURIComponent(segments[i]);
      } catch {
        value = undefined;
      }
      params.push(value);
    } else if (pattern[i] !== segments[i]) return null;
  }
  return params;
}

/** The decoded parameters, or `validation_failed` naming the first malformed one. */
function decoded(pattern: string[], params: (string | undefined)[]): string[] {
  const at = params.indexOf(undefined);
  if (at < 0) return params as string[];
  const name = pattern.filter((p) => p.startsWith(":"))[at].slice(1);
  throw invalid(name, "not valid percent-encoding");
}

/**
 * The request's URL. The runtime builds it from the `Host` header, so a malformed one (`a b`,
 * `x:99999`) makes it unparsable: that is the client's bad request (RFC 9112 §3.2), not a 500.
 */
function requestUrl(request: HttpRequest): URL {
  try {
    return new URL(request.url);
  } catch {
    throw invalid("Host", "not a valid host name and port");
  }
}

/**
 * The body of `POST /v1/backup`: `{path}`, a file in the server's backup directory (relative to
 * it, or absolute); the backup itself refuses one outside it.
 */
function parseBackupPath(value: unknown): string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalid("body", "expected an object {path}");
  }
  for (const name of Object.keys(value)) {
    if (name !== "path") throw invalid(name, "unknown field");
  }
  const path = (value as { path?: unknown }).path;
  if (typeof path !== "string" || path === "" || path.length > 4096) {
    throw invalid("path", "expected a file path in the server's backup directory (--backup-dir)");
  }
  if (path.includes("\0")) throw invalid("path", "must not contain NUL");
  return path;
}

function notFound(request: HttpRequest, url: URL): TegamiError {
  return new TegamiError(
    "not_found",
    `No route for ${request.method} ${url.pathname.slice(0, 200)}: see docs/api.md`,
  );
}

function unauthorized(): TegamiError {
  return new TegamiError(
    "unauthorized",
    "Cannot authenticate: send a valid token as Authorization: Bearer <token>",
  );
}
