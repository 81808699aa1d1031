/**
 * The group routes of the HTTP API (docs/api.md, "Fair shares"): `GET /v1/queues/{queue}/groups`
 * lists a queue's ordering groups a page at a time, and `GET`, `PUT` and `DELETE
 * /v1/queues/{queue}/groups/{group}` read, replace and reset one group's settings (its weight,
 * concurrency and rate). They take the scopes of the queue settings routes: reading is
 * `readQueues`, changing is `queueSettings`.
 *
 * @module
 */

import { parseNamePage, utf8Length } from "../api/requests.ts";
import { groupStateView } from "../api/views.ts";
import { OPERATIONS } from "../auth/operations.ts";
import type { Broker } from "../core/broker.ts";
import { invalid } from "../core/errors.ts";
import {
  checkGroupName,
  type GroupState,
  MAX_GROUP_PAGE,
  parseGroupSettings,
} from "../core/group_settings.ts";
import { MAX_GROUP_BYTES } from "../core/limits.ts";
import type { Logger } from "../observe/log.ts";
import { json } from "./respond.ts";
import type { Context, Route } from "./route.ts";

/** What the group routes need of the API around them. */
export interface GroupRouteNeeds {
  /** The broker. */
  broker: Broker;
  /** The log. */
  log: Logger;
  /** Reads the request's body as JSON (undefined when there is none). */
  body(ctx: Context): Promise<unknown>;
}

/** The groups in one page of `GET /v1/queues/{queue}/groups` when the caller gives no `limit`. */
export const DEFAULT_GROUP_PAGE = 100;

/** The group routes. */
export function groupRoutes(needs: GroupRouteNeeds): Route[] {
  const { broker, log, body } = needs;

  /** Logs a change of a group's settings, as they are now. */
  const logChange = (ctx: Context, state: GroupState): void => {
    log.info("Group settings changed", {
      queue: ctx.params[0],
      group: state.group,
      settings: JSON.stringify(groupStateView(state).settings),
      by: ctx.principal.name,
    });
  };

  return [
    {
      method: "GET",
      path: ["v1", "queues", ":queue", "groups"],
      access: OPERATIONS.readQueues,
      query: true,
      handle: async (ctx) => {
        const page = parseNamePage(ctx.url.searchParams, groupCursor);
        const limit = page.limit === null
          ? DEFAULT_GROUP_PAGE
          : Math.min(page.limit, MAX_GROUP_PAGE);
        const groups = await broker.listGroups(ctx.params[0], page.after, limit);
        const next = groups.length === limit ? groups[groups.length - 1].group : null;
        return json(200, { groups: groups.map(groupStateView), next_after: next });
      },
    },
    {
      method: "GET",
      path: ["v1", "queues", ":queue", "groups", ":group"],
      access: OPERATIONS.readQueues,
      handle: async (ctx) => {
        const state = await broker.group(ctx.params[0], pathGroup(ctx.params[1]));
        return json(200, groupStateView(state));
      },
    },
    {
      method: "PUT",
      path: ["v1", "queues", ":queue", "groups", ":group"],
      access: OPERATIONS.queueSettings,
      handle: async (ctx) => {
        const group = pathGroup(ctx.params[1]);
        const settings = parseGroupSettings(await body(ctx));
        const state = await broker.putGroupSettings(ctx.params[0], group, settings);
        logChange(ctx, state);
        return json(200, groupStateView(state));
      },
    },
    {
      method: "DELETE",
      path: ["v1", "queues", ":queue", "groups", ":group"],
      access: OPERATIONS.queueSettings,
      handle: async (ctx) => {
        const state = await broker.putGroupSettings(ctx.params[0], pathGroup(ctx.params[1]), null);
        logChange(ctx, state);
        return json(200, groupStateView(state));
      },
    },
  ];
}

/** A group name from the path (percent-decoded by the router), checked as a job's group. */
function pathGroup(segment: string): string {
  checkGroupName(segment);
  return segment;
}

/** The `after` cursor of the listing: a group name, checked like one. */
function groupCursor(value: unknown, field: string): string {
  const name = String(value);
  const bytes = utf8Length(name);
  if (bytes > MAX_GROUP_BYTES) {
    throw invalid(field, `expected 1 to ${MAX_GROUP_BYTES} bytes of UTF-8, got ${bytes}`);
  }
  if (!name.isWellFormed() || name.includes("\u0000")) {
    throw invalid(field, "expected a group name: well-formed Unicode without NUL (U+0000)");
  }
  return name;
}
