/**
 * A route of the HTTP API, as the route table in api.ts holds it, and what its handler is given.
 *
 * @module
 */

import type { Access } from "../auth/operations.ts";
import type { Principal } from "../auth/tokens.ts";
import type { HttpRequest } from "./http_request.ts";
import type { Answer } from "./respond.ts";

/** What a route's handler is given: the request, who sent it, and the path's parameters. */
export interface Context {
  /** The request. */
  request: HttpRequest;
  /** Its URL. */
  url: URL;
  /** Who it acts as (authenticated, its access to the route checked). */
  principal: Principal;
  /** The path's parameters, percent-decoded, in order. */
  params: string[];
}

/** One route: a method and path pattern, the access it needs, its handler. */
export interface Route {
  /** The method (a GET route answers HEAD too). */
  method: string;
  /** The path's segments; a segment starting with `:` is a parameter. */
  path: string[];
  /** Who may call it (OPERATIONS in lib/auth/operations.ts). */
  access: Access;
  /**
   * True when the handler reads the query string (and refuses names it does not know); every
   * other route under /v1 refuses any query parameter, so that `?max=5` on a lease is an error
   * rather than a silently ignored option.
   */
  query?: true;
  /** Answers the request. */
  handle: (ctx: Context) => Promise<Answer> | Answer;
}
