/**
 * Every answer the test suite receives, checked against the API documents the server serves:
 * an HTTP answer against its operation's response in `lib/http/openapi.json` (a status the
 * document does not list is a failure, and so is a body that breaks its schema), a WebSocket
 * frame from the server against its message in `lib/ws/asyncapi.json`. `send()` and `WsClient`
 * call these on everything they receive, so each end-to-end test also tests the documents.
 *
 * With `TEGAMI_SCHEMA_REPORT=FILE` set, each check appends one line to FILE
 * (`METHOD PATH STATUS` or `ws OP`), so a run can count what the suite covered.
 *
 * @module
 */

import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import openapi from "../../lib/http/openapi.json" with { type: "json" };
import asyncapi from "../../lib/ws/asyncapi.json" with { type: "json" };
import { isSqsRequest } from "./sqs_paths.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(openapi as Json, "openapi");
// AsyncAPI schemas are JSON Schema (draft 7 keywords, all valid in 2020-12 as used here).
ajv.addSchema(asyncapi as Json, "asyncapi");

const reportFile = Deno.env.get("TEGAMI_SCHEMA_REPORT") ?? null;

function report(line: string): void {
  if (reportFile !== null) Deno.writeTextFileSync(reportFile, line + "\n", { append: true });
}

/** JSON-pointer escaping of one path segment. */
function pointer(segment: string): string {
  return segment.replaceAll("~", "~0").replaceAll("/", "~1");
}

interface Operation {
  template: string;
  pattern: RegExp;
  methods: Map<string, Json>;
}

const OPERATIONS: Operation[] = Object.entries(openapi.paths as Record<string, Json>).map(
  ([template, item]) => ({
    template,
    pattern: new RegExp(
      "^" + template.replace(/\{[^}]+\}/g, "[^/]+").replaceAll(".", "\\.") + "$",
    ),
    methods: new Map(
      Object.entries(item).filter(([key]) => key !== "parameters").map((
        [method, op],
      ) => [method.toUpperCase(), op]),
    ),
  }),
);

const validators = new Map<string, ValidateFunction>();

function validator(ref: string): ValidateFunction {
  let validate = validators.get(ref);
  if (validate === undefined) {
    validate = ajv.getSchema(ref);
    if (validate === undefined) throw new Error(`No schema at ${ref}`);
    validators.set(ref, validate);
  }
  return validate;
}

function failure(what: string, validate: ValidateFunction, body: unknown): Error {
  const errors = ajv.errorsText(validate.errors, { separator: "; " });
  return new Error(`${what} breaks its schema: ${errors}\n${JSON.stringify(body).slice(0, 500)}`);
}

/** The response object of an operation for a status, with `$ref`s to components followed. */
function responseOf(op: Json, status: number): { response: Json; ref: string } | null {
  const declared = op.responses?.[String(status)];
  if (declared === undefined) return null;
  if (typeof declared.$ref === "string") {
    const name = declared.$ref.split("/").pop();
    return {
      response: (openapi.components.responses as Json)[name],
      ref: `openapi#/components/responses/${name}`,
    };
  }
  return { response: declared, ref: "" };
}

/**
 * Checks an HTTP answer against the OpenAPI document: its status is one the operation lists,
 * and a JSON body validates against the schema given for that status. A path the document does
 * not describe, or a method it does not list for the path, must answer 404 `not_found`.
 */
export function checkHttpAnswer(
  method: string,
  url: string,
  status: number,
  contentType: string | null,
  text: string,
): void {
  const path = new URL(url, "http://x").pathname;
  // The Amazon SQS API shares the port; its answers are checked by real SQS clients (tests/sqs).
  if (isSqsRequest(method, path)) return;
  const found = OPERATIONS.find((o) => o.pattern.test(path));
  const op = found?.methods.get(method.toUpperCase());
  const where = `${method} ${path} → ${status}`;
  if (found === undefined || op === undefined) {
    report(`${method} (undocumented) ${status}`);
    if (status !== 404) throw new Error(`${where}: an undocumented route must answer 404`);
    const body: Json = JSON.parse(text);
    const validate = validator("openapi#/components/schemas/Error");
    const code: unknown = body?.error?.code;
    if (!validate(body) || code !== "not_found") throw failure(where, validate, body);
    return;
  }
  report(`${method} ${found.template} ${status}`);
  const declared = responseOf(op, status);
  if (declared === null) throw new Error(`${where}: status not documented for this operation`);
  const content = declared.response.content as Record<string, Json> | undefined;
  if (content === undefined) return;
  const type = (contentType ?? "").split(";", 1)[0].trim();
  if (!(type in content)) {
    throw new Error(`${where}: Content-Type "${contentType}" is not one documented`);
  }
  if (type !== "application/json") return;
  const base = declared.ref !== ""
    ? declared.ref
    : `openapi#/paths/${pointer(found.template)}/${method.toLowerCase()}/responses/${status}`;
  const validate = validator(`${base}/content/application~1json/schema`);
  const body = JSON.parse(text);
  if (!validate(body)) throw failure(where, validate, body);
}

const SERVER_FRAMES = new Set([
  "job",
  "jobs",
  "cancel",
  "expired",
  "ok",
  "error",
  "progressed",
  "ended",
  "gone",
]);

/** Checks a frame the server sent against its message in the AsyncAPI document. */
export function checkServerFrame(text: string): void {
  const frame = JSON.parse(text);
  const op = frame?.op;
  if (!SERVER_FRAMES.has(op)) throw new Error(`Server frame with an undocumented op: ${text}`);
  report(`ws ${op}`);
  const validate = validator(`asyncapi#/components/schemas/${op}Frame`);
  if (!validate(frame)) throw failure(`The server's ${op} frame`, validate, frame);
}
