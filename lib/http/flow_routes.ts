/**
 * The flow routes of the HTTP API (docs/api.md, "Flows"): `POST /v1/flows`, `GET /v1/flows`,
 * `GET`, `DELETE /v1/flows/{id}` and `POST /v1/jobs/{id}/flow`. A flow spans queues, so a token
 * limited to some must hold every queue its nodes name (and cannot list flows, whose summaries
 * name none).
 *
 * @module
 */

import { parseAddNodes, parseFlow, pathFlowId } from "../api/flows.ts";
import { parseFlowsQuery, pathJobId, type RequestLimits } from "../api/requests.ts";
import { flowCreatedView } from "../api/views.ts";
import { OPERATIONS } from "../auth/operations.ts";
import { requireQueue } from "../auth/tokens.ts";
import type { Broker } from "../core/broker.ts";
import type { Clock } from "../core/clock.ts";
import { flowNotFound } from "../core/flow.ts";
import type { Logger } from "../observe/log.ts";
import type { JsonBody } from "./body.ts";
import { json } from "./respond.ts";
import type { Context, Route } from "./route.ts";

/** What the flow routes need of the API around them. */
export interface FlowRouteNeeds {
  /** The broker. */
  broker: Broker;
  /** The clock. */
  clock: Clock;
  /** Request limits. */
  limits: RequestLimits;
  /** The log. */
  log: Logger;
  /** Reads the request's body as JSON, with the text it was parsed from. */
  bodyText(ctx: Context): Promise<JsonBody>;
  /** Checks the caller may act on the queue of job `id` (which must exist). */
  jobAccess(ctx: Context, id: number): Promise<void>;
  /** Throws `forbidden` for a token limited to some queues, naming the `action`. */
  requireEveryQueue(ctx: Context, action: string): void;
}

/** The flow routes. */
export function flowRoutes(needs: FlowRouteNeeds): Route[] {
  const { broker, clock, limits, log, bodyText, jobAccess, requireEveryQueue } = needs;

  /** Checks the caller may use every one of `queues` (a flow's, or nodes'): all, not some. */
  const requireQueues = (ctx: Context, queues: Iterable<string>): void => {
    if (!ctx.principal.limited) return;
    for (const queue of new Set(queues)) requireQueue(ctx.principal, queue);
  };

  /** The flow a path names, after checking the caller may use every queue of its nodes. */
  const visibleFlow = async (ctx: Context, id: number) => {
    const flow = await broker.getFlow(id);
    if (flow === null) throw flowNotFound(id);
    requireQueues(ctx, flow.nodes.map((node) => node.queue));
    return flow;
  };

  return [
    {
      method: "POST",
      path: ["v1", "flows"],
      access: OPERATIONS.createFlow,
      handle: async (ctx) => {
        const { value, text } = await bodyText(ctx);
        const flow = parseFlow(value, limits, clock.now(), text);
        requireQueues(ctx, flow.nodes.map((node) => node.queue));
        const created = await broker.createFlow(flow);
        return json(created.deduplicated ? 200 : 201, flowCreatedView(created));
      },
    },
    {
      method: "GET",
      path: ["v1", "flows"],
      access: OPERATIONS.listFlows,
      query: true,
      handle: async (ctx) => {
        const { limit, after, newest } = parseFlowsQuery(ctx.url.searchParams);
        // A summary names no queues: a token limited to some could not be shown only its own.
        requireEveryQueue(ctx, "list flows");
        const flows = await broker.listFlows(after, limit, newest);
        const next = flows.length === limit ? flows[flows.length - 1].id : null;
        return json(200, { flows, next_after: next });
      },
    },
    {
      method: "GET",
      path: ["v1", "flows", ":id"],
      access: OPERATIONS.readFlow,
      handle: async (ctx) => json(200, await visibleFlow(ctx, pathFlowId(ctx.params[0]))),
    },
    {
      method: "DELETE",
      path: ["v1", "flows", ":id"],
      access: OPERATIONS.cancelFlow,
      handle: async (ctx) => {
        const id = pathFlowId(ctx.params[0]);
        // A limited token must hold every queue of the flow; nodes a running job adds between
        // this read and the cancel are cancelled too, whatever their queues.
        if (ctx.principal.limited) await visibleFlow(ctx, id);
        const out = await broker.cancelFlow(id);
        log.info("Flow cancelled", { flow: id, cancelled: out.cancelled, by: ctx.principal.name });
        return json(200, { id, cancelled: out.cancelled });
      },
    },
    {
      method: "POST",
      path: ["v1", "jobs", ":id", "flow"],
      access: OPERATIONS.addFlowNodes,
      handle: async (ctx) => {
        const id = pathJobId(ctx.params[0]);
        const { value, text } = await bodyText(ctx);
        const req = parseAddNodes(value, limits, clock.now(), text);
        await jobAccess(ctx, id);
        requireQueues(ctx, req.nodes.map((node) => node.queue));
        return json(201, flowCreatedView(await broker.addFlowNodes(id, req.token, req.nodes)));
      },
    },
  ];
}
