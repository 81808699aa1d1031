/**
 * The SQS API's entry: which requests are SQS's (`POST /` and `POST /<account>/<queue>`), and
 * how one is answered — its protocol told by its `Content-Type` (JSON `application/x-amz-json-1.0`
 * or query `application/x-www-form-urlencoded`), its body read under the server's limits, its
 * signature checked (`sqs_auth.ts`), its access checked as tegami's own API checks it
 * (`lib/auth/operations.ts`), its action run, and the answer or error written in its protocol.
 * Every answer carries a request id (`x-amzn-RequestId`; `ResponseMetadata/RequestId` in XML)
 * and, for the dashboard, where this server's queue URLs start (`x-tegami-queue-url-prefix`).
 *
 * The protocol is written down in docs/sqs.md.
 *
 * @module
 */

import { type Access, OPERATIONS, requireAccess } from "../auth/operations.ts";
import type { TokenSet } from "../auth/tokens.ts";
import { strictUtf8Decoder } from "../api/utf8.ts";
import type { BodyBudget } from "../http/body_budget.ts";
import { checkCrossSite, type CrossSiteRules } from "../http/cross_site.ts";
import type { HttpRequest } from "../http/http_request.ts";
import { type Answer, JsonAnswer } from "../http/respond.ts";
import { describeCause, type Logger } from "../observe/log.ts";
import type { Action, ActionCall, SqsServices } from "./action_context.ts";
import { AMZ_JSON, decodeJson, encodeJsonError, queryErrorHeader } from "./json_protocol.ts";
import { targetAction } from "./json_protocol.ts";
import { MESSAGE_ACTIONS } from "./message_actions.ts";
import { moveTaskActions, MoveTasks } from "./move_tasks.ts";
import { QUEUE_ACTIONS } from "./queue_actions.ts";
import { decodeQuery, encodeXmlAnswer, encodeXmlError } from "./query_protocol.ts";
import { queueOfPath, queueUrl } from "./queue_url.ts";
import { INPUTS, OUTPUTS } from "./shapes.ts";
import { readBodyBytes } from "../http/body.ts";
import { sqsPrincipal } from "./sqs_auth.ts";
import { SqsError, toSqsError } from "./sqs_error.ts";

/** The access each action needs, from the table tegami's own API uses. */
export const SQS_ACCESS: Readonly<Record<string, Access>> = {
  CreateQueue: OPERATIONS.queueSettings,
  GetQueueUrl: OPERATIONS.readQueues,
  ListQueues: OPERATIONS.readQueues,
  DeleteQueue: OPERATIONS.cancelJob,
  PurgeQueue: OPERATIONS.cancelJob,
  GetQueueAttributes: OPERATIONS.readQueues,
  SetQueueAttributes: OPERATIONS.queueSettings,
  TagQueue: OPERATIONS.queueSettings,
  UntagQueue: OPERATIONS.queueSettings,
  ListQueueTags: OPERATIONS.readQueues,
  ListDeadLetterSourceQueues: OPERATIONS.readQueues,
  StartMessageMoveTask: OPERATIONS.deadLetters,
  ListMessageMoveTasks: OPERATIONS.readQueues,
  CancelMessageMoveTask: OPERATIONS.deadLetters,
  SendMessage: OPERATIONS.enqueue,
  SendMessageBatch: OPERATIONS.enqueue,
  ReceiveMessage: OPERATIONS.lease,
  DeleteMessage: OPERATIONS.settle,
  DeleteMessageBatch: OPERATIONS.settle,
  ChangeMessageVisibility: OPERATIONS.settle,
  ChangeMessageVisibilityBatch: OPERATIONS.settle,
};

/** SQS actions tegami does not answer yet, refused as such rather than as unknown. */
const NOT_YET = new Set(["AddPermission", "RemovePermission"]);

/** What the SQS API needs from the server around it. */
export interface SqsApiOptions extends SqsServices {
  /** Tokens, or null when auth is off. */
  tokens: TokenSet | null;
  /** The largest request body, bytes (`--max-body`). */
  maxBody: number;
  /** The log. */
  log: Logger;
  /** False while shutting down. */
  accepting: () => boolean;
  /** The Host and Origin rules applied when auth is off. @default none */
  crossSite?: CrossSiteRules;
  /** Time limit and memory budget for request bodies. @default none */
  body?: { timeoutMs?: number; budget?: BodyBudget };
  /** Sees every answered request (`sqs:<Action>`, status, duration). */
  onRequest?: (route: string, status: number, ms: number) => void;
}

/** The SQS API: which requests it takes, and its handler. */
export interface SqsApi {
  /** Whether `request` is for the SQS API (`POST /` or `POST /<account>/<queue>`). */
  matches(request: HttpRequest): boolean;
  /** Answers an SQS request. */
  handle(request: HttpRequest): Promise<Answer>;
  /** Stops its background work (message move tasks); the server is shutting down. */
  close(): void;
}

/** The path of an absolute URL, without its query, read without parsing the whole URL. */
function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const end = url.indexOf("?", start);
  return end < 0 ? url.slice(start) : url.slice(start, end);
}

function mediaType(contentType: string | null): string {
  return (contentType ?? "").split(";", 1)[0].trim().toLowerCase();
}

const FORM = "application/x-www-form-urlencoded";
const XML_TYPE = "text/xml";
const strictUtf8 = strictUtf8Decoder();

/**
 * The header every SQS answer carries with the start of this server's queue URLs
 * (`http://host:port/ACCOUNT/`), so a page can name the SQS endpoint without signing a request.
 */
export const QUEUE_URL_PREFIX_HEADER = "x-tegami-queue-url-prefix";

/** Makes the SQS API over the server's parts. */
export function createSqsApi(options: SqsApiOptions): SqsApi {
  const { identity, log } = options;
  const queuePrefix = `/${identity.account}/`;
  const moveTasks = new MoveTasks(options.broker, identity);
  const HANDLERS: Readonly<Record<string, Action>> = {
    ...QUEUE_ACTIONS,
    ...MESSAGE_ACTIONS,
    ...moveTaskActions(moveTasks),
  };

  // Clients keep calling one origin: its prefix is made once.
  let lastOrigin = "";
  let lastPrefix = "";
  const prefixOf = (origin: string): string => {
    if (origin !== lastOrigin) {
      lastOrigin = origin;
      lastPrefix = queueUrl(origin, identity, "");
    }
    return lastPrefix;
  };

  // A client calls the same URL again and again (`/`, or its queue's URL): the last one without a
  // query is parsed once. A URL with a query (a presigned request) is parsed each time.
  let lastUrlText = "";
  let lastUrl: URL | null = null;
  const urlOf = (text: string): URL => {
    if (text === lastUrlText && lastUrl !== null) return lastUrl;
    const url = new URL(text);
    if (url.search === "") {
      lastUrlText = text;
      lastUrl = url;
    }
    return url;
  };

  const matches = (request: HttpRequest): boolean => {
    if (request.method !== "POST") return false;
    const path = pathOf(request.url);
    if (path === "/") return true;
    // A queue URL's path: the account, then one segment naming the queue.
    return path.length > queuePrefix.length && path.startsWith(queuePrefix) &&
      !path.includes("/", queuePrefix.length);
  };

  const run = async (
    request: HttpRequest,
    url: URL,
    protocol: "json" | "query",
    seen: { action: string },
  ): Promise<{ action: string; output: unknown }> => {
    if (options.tokens === null && options.crossSite !== undefined) {
      checkCrossSite(request, options.crossSite);
    }
    if (!options.accepting()) {
      throw new SqsError("ServiceUnavailable", "Cannot take the request: the server is stopping");
    }
    // Read as tegami's own bodies are (its errors become AWS's in toSqsError); the bytes are
    // kept as they came: the signature covers them, and the query protocol's are not JSON.
    const body = await readBodyBytes(request, options.maxBody, {
      timeoutMs: options.body?.timeoutMs,
      budget: options.body?.budget,
    });
    const principal = sqsPrincipal(options.tokens, {
      method: request.method,
      url,
      header: (name) => request.headers.get(name),
      body,
    }, Date.now());
    let text: string;
    try {
      text = strictUtf8(body);
    } catch {
      throw new SqsError("SerializationException", "Cannot read the request body: not UTF-8");
    }
    let action: string;
    let params: URLSearchParams | null = null;
    if (protocol === "json") {
      action = targetAction(request.headers.get("x-amz-target"));
    } else {
      params = new URLSearchParams(text);
      // A presigned request carries its parameters in the URL.
      for (const [name, value] of url.searchParams) {
        if (!name.startsWith("X-Amz-") && !params.has(name)) params.append(name, value);
      }
      action = params.get("Action") ?? "";
      if (action === "") throw new SqsError("MissingParameter", "The request must contain Action.");
    }
    const handler = Object.hasOwn(HANDLERS, action) ? HANDLERS[action] : undefined;
    if (handler === undefined) {
      if (NOT_YET.has(action)) {
        throw new SqsError(
          "UnsupportedOperation",
          `${action} is not supported by tegami yet (see docs/sqs.md)`,
        );
      }
      throw new SqsError(
        "InvalidAction",
        `The action ${action.slice(0, 64)} is not valid for this endpoint.`,
      );
    }
    seen.action = action;
    const shape = INPUTS[action];
    const input = protocol === "json" ? decodeJson(text, shape) : decodeQuery(params!, shape);
    requireAccess(principal, SQS_ACCESS[action]);
    const call: ActionCall = {
      input,
      principal,
      origin: url.origin,
      pathQueue: queueOfPath(url.pathname, identity),
      signal: request.signal,
      protocol,
      readsJobQueue: options.tokens !== null,
    };
    return { action, output: await handler(options, call) };
  };

  const handle = async (request: HttpRequest): Promise<Answer> => {
    const started = performance.now();
    const requestId = crypto.randomUUID();
    const type = mediaType(request.headers.get("content-type"));
    const protocol = type === AMZ_JSON || request.headers.has("x-amz-target") ? "json" : "query";
    const seen = { action: "" };
    let answer: JsonAnswer;
    let origin: string | null = null;
    try {
      let url: URL;
      try {
        url = urlOf(request.url);
      } catch {
        throw new SqsError("InvalidParameterValue", "The Host header is not a valid host name");
      }
      origin = url.origin;
      // A presigned request carries everything in its URL and may have no body, hence no type.
      const presigned = type === "" && url.searchParams.has("X-Amz-Signature");
      if (protocol === "query" && type !== FORM && !presigned) {
        throw new SqsError(
          "UnsupportedMediaType",
          `Cannot read the request: Content-Type must be ${AMZ_JSON} or ${FORM}`,
        );
      }
      const { action, output } = await run(request, url, protocol, seen);
      if (protocol === "json") {
        answer = new JsonAnswer(200, output === undefined ? "{}" : JSON.stringify(output));
        answer.headers.set("content-type", AMZ_JSON);
      } else {
        answer = new JsonAnswer(200, encodeXmlAnswer(action, OUTPUTS[action], output, requestId));
        answer.headers.set("content-type", XML_TYPE);
      }
    } catch (thrown) {
      const error = toSqsError(thrown);
      if (error.kind.status >= 500) {
        log.error("SQS request failed", {
          action: seen.action,
          code: error.code,
          cause: describeCause(error.cause ?? thrown),
        });
      }
      if (protocol === "json") {
        answer = new JsonAnswer(error.kind.status, encodeJsonError(error));
        answer.headers.set("content-type", AMZ_JSON);
        answer.headers.set("x-amzn-query-error", queryErrorHeader(error));
      } else {
        answer = new JsonAnswer(error.kind.status, encodeXmlError(error, requestId));
        answer.headers.set("content-type", XML_TYPE);
      }
      if (error.code === "RequestTimeout") answer.headers.set("connection", "close");
    }
    answer.headers.set("x-amzn-requestid", requestId);
    if (origin !== null) {
      answer.headers.set(QUEUE_URL_PREFIX_HEADER, prefixOf(origin));
    }
    const route = seen.action === "" ? "sqs" : `sqs:${seen.action}`;
    options.onRequest?.(route, answer.status, performance.now() - started);
    return answer;
  };

  return { matches, handle, close: () => moveTasks.close() };
}
