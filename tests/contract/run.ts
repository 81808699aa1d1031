/**
 * `deno task contract`: checks that the API documents are true, with tools nobody here wrote.
 *
 * 1. Lint: `@redocly/cli lint` (recommended-strict) on `lib/http/openapi.json`; the AsyncAPI
 *    parser's validation on `lib/ws/asyncapi.json`.
 * 2. For a server without auth and one with tokens (real processes, temp databases):
 *    - Prism (`@stoplight/prism-cli proxy --errors`) in front of the server while the end-to-end
 *      traffic of `traffic.ts` goes through it: any request or answer breaking the document is
 *      a Prism error, counted as a violation;
 *    - Portman (`@apideck/portman`) turns the document into a Postman collection, one request per
 *      operation plus fuzzing variations (required fields removed, numbers past their minimum
 *      and maximum, strings past their lengths), and runs it with Newman against the server.
 *      Each answer is asserted, from the document alone, to be a documented status of its
 *      operation, not 5xx, and to match that status's schema.
 *
 * The tools are the pinned packages of `tests/contract/tools/package.json`, installed by
 * `.ci/run` (`npm ci`), and run under Node. Bounded: every step has a time limit, and the whole
 * run takes about two minutes here.
 *
 * @module
 */

import openapi from "../../lib/http/openapi.json" with { type: "json" };
import { spawnServer } from "../helpers/process_server.ts";
import { driveTraffic, type TrafficTokens } from "./traffic.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const HERE = new URL(".", import.meta.url).pathname;
const ROOT = new URL("../../", import.meta.url).pathname;
const BIN = `${HERE}tools/node_modules/.bin`;
const SPEC = `${ROOT}lib/http/openapi.json`;

const failures: string[] = [];
const figures: string[] = [];

function fail(what: string): void {
  failures.push(what);
  console.error(`FAIL ${what}`);
}

async function exec(
  command: string,
  args: string[],
  timeoutMs: number,
  cwd = ROOT,
): Promise<{ code: number; out: string }> {
  const child = new Deno.Command(command, {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", FORCE_COLOR: "0" },
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const { code, stdout, stderr } = await child.output();
  clearTimeout(timer);
  const decoder = new TextDecoder();
  return { code, out: decoder.decode(stdout) + decoder.decode(stderr) };
}

async function lint(): Promise<void> {
  const redocly = await exec(`${BIN}/redocly`, [
    "lint",
    "--config",
    `${HERE}redocly.yaml`,
    SPEC,
  ], 120_000);
  const problems = redocly.out.match(/You have (\d+) (error|warning)/g) ?? [];
  console.log(
    redocly.out.split("\n").filter((l) => /validated|valid|error|warning/i.test(l))
      .filter((l) => !l.includes("║")).join("\n"),
  );
  if (redocly.code !== 0 || problems.length > 0) fail(`redocly lint: ${problems.join(", ")}`);
  figures.push(
    `redocly lint (recommended-strict): ${
      Object.keys(openapi.paths).length
    } paths, ${operations().length} operations, ${problems.length === 0 ? "0 problems" : problems}`,
  );
  const asyncapi = await exec(
    "node",
    [`${HERE}asyncapi_lint.mjs`, `${ROOT}lib/ws/asyncapi.json`],
    120_000,
  );
  console.log(asyncapi.out.trim());
  if (asyncapi.code !== 0) fail("asyncapi validation");
  figures.push(asyncapi.out.trim().split("\n").at(-1)!);
}

/** Every operation of the document: method, path, and its responses. */
function operations(): { method: string; path: string; op: Json }[] {
  const out = [];
  for (const [path, item] of Object.entries(openapi.paths as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item)) {
      if (method === "parameters") continue;
      out.push({ method, path, op });
    }
  }
  return out;
}

/** A schema with every `$ref` replaced by what it points to (the document has no cycles). */
function inline(value: Json): Json {
  if (Array.isArray(value)) return value.map(inline);
  if (value === null || typeof value !== "object") return value;
  if (typeof value.$ref === "string") {
    let target: Json = openapi;
    for (const part of value.$ref.slice(2).split("/")) target = target[part];
    return inline(target);
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inline(v)]));
}

/** The Postman test script for an operation: a documented status, no 5xx, its schema. */
function assertionScript(op: Json): string {
  const statuses: Record<string, Json> = {};
  for (const [status, response] of Object.entries(inline(op.responses) as Record<string, Json>)) {
    statuses[status] = response.content?.["application/json"]?.schema ?? null;
  }
  return [
    `const documented = ${JSON.stringify(statuses)};`,
    `const status = String(pm.response.code);`,
    `pm.test("[tegami] no 5xx", () => pm.expect(pm.response.code).to.be.below(500));`,
    `pm.test("[tegami] status " + status + " is documented", () => pm.expect(Object.keys(documented)).to.include(status));`,
    `if (documented[status]) {`,
    `  pm.test("[tegami] the " + status + " answer matches its schema", () => pm.response.to.have.jsonSchema(documented[status]));`,
    `}`,
  ].join("\n");
}

/** Portman's configuration, made from the document: assertions, fuzzing, a realistic flow. */
function portmanConfig(): Json {
  const fuzz = {
    requiredFields: { enabled: true },
    minimumNumberFields: { enabled: true },
    maximumNumberFields: { enabled: true },
    minLengthFields: { enabled: true },
    maxLengthFields: { enabled: true },
  };
  const ops = operations().filter((o) => o.path !== "/v1/ws" && o.path !== "/v1/events");
  const target = (o: { method: string; path: string }) => `${o.method.toUpperCase()}::${o.path}`;
  return {
    version: 1.0,
    tests: {
      contractTests: [],
      extendTests: ops.map((o) => ({
        openApiOperation: target(o),
        tests: [assertionScript(o.op)],
      })),
      variationTests: ops.map((o) => ({
        openApiOperation: target(o),
        variations: [{
          name: "fuzz",
          fuzzing: [{ requestBody: [fuzz], requestQueryParams: [fuzz] }],
          tests: { extendTests: [{ tests: [assertionScript(o.op)] }] },
        }],
      })),
    },
    // A realistic flow: the queue is a real name, and job ids and tokens come from a real lease.
    overwrites: [
      ...ops.filter((o) => o.path.includes("{queue}")).map((o) => ({
        openApiOperation: target(o),
        overwriteRequestPathVariables: [{ key: "queue", value: "portman", overwrite: true }],
      })),
      ...ops.filter((o) => o.path.includes("{id}")).map((o) => ({
        openApiOperation: target(o),
        overwriteRequestPathVariables: [{ key: "id", value: "{{jobId}}", overwrite: true }],
      })),
      {
        openApiOperation: "POST::/v1/queues/{queue}/jobs",
        overwriteRequestBody: [{ key: "jobs", remove: true }, { key: "delay_ms", remove: true }],
      },
      ...["ack", "nack", "extend", "checkpoint"].map((a) => ({
        openApiOperation: `POST::/v1/jobs/{id}/${a}`,
        overwriteRequestBody: [{ key: "token", value: "{{leaseToken}}", overwrite: true }],
      })),
    ],
    assignVariables: [{
      openApiOperation: "POST::/v1/queues/{queue}/leases",
      collectionVariables: [
        { responseBodyProp: "jobs[0].id", name: "jobId" },
        { responseBodyProp: "jobs[0].lease.token", name: "leaseToken" },
      ],
    }],
    globals: {
      securityOverwrites: { remove: true },
      collectionPreRequestScripts: [
        "pm.collectionVariables.set('jobId', pm.collectionVariables.get('jobId') || '1');",
        "const t = pm.environment.get('tegamiToken'); if (t) pm.request.headers.upsert({ key: 'Authorization', value: 'Bearer ' + t });",
      ],
      orderOfOperations: [
        "POST::/v1/queues/{queue}/jobs",
        "POST::/v1/queues/{queue}/leases",
        "POST::/v1/jobs/{id}/checkpoint",
        "POST::/v1/jobs/{id}/extend",
        "GET::/v1/jobs/{id}",
        "POST::/v1/jobs/{id}/nack",
        "POST::/v1/jobs/{id}/ack",
        "POST::/v1/jobs/{id}/run",
        "GET::/v1/queues/{queue}/jobs",
        "DELETE::/v1/jobs/{id}",
      ],
    },
  };
}

/** A Postman URL object as text. */
function urlOf(url: Json): string {
  const host = (url.host ?? []).join(".");
  const query = (url.query ?? []).filter((q: Json) => !q.disabled).map((q: Json) =>
    `${q.key}=${q.value}`
  ).join("&");
  return `${url.protocol ?? "http"}://${host}${url.port ? ":" + url.port : ""}/${
    (url.path ?? []).join("/")
  }${query ? "?" + query : ""}`;
}

async function portman(base: string, token: string | null, label: string): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "tegami-portman-" });
  try {
    await Deno.writeTextFile(`${dir}/portman-config.json`, JSON.stringify(portmanConfig()));
    // Streams and the upgrade are no request/answer pairs for Newman: leave them out.
    await Deno.writeTextFile(
      `${dir}/filter.json`,
      JSON.stringify({ operationIds: ["events", "websocket"] }),
    );
    const report = `${dir}/newman.json`;
    const convert = await exec(
      `${BIN}/portman`,
      [
        "-l",
        SPEC,
        "-b",
        base,
        "-c",
        `${dir}/portman-config.json`,
        "--filterFile",
        `${dir}/filter.json`,
        "-o",
        `${dir}/collection.json`,
      ],
      120_000,
      dir,
    ); // in the temp dir: Portman writes its intermediate files to ./tmp
    if (convert.code !== 0) {
      console.log(convert.out.slice(-3000));
      fail(`portman (${label}): the conversion failed`);
      return;
    }
    const run = await exec(`${BIN}/newman`, [
      "run",
      `${dir}/collection.json`,
      "--reporters",
      "json",
      "--reporter-json-export",
      report,
      "--timeout-request",
      "20000",
      "--suppress-exit-code",
      ...(token === null ? [] : ["--env-var", `tegamiToken=${token}`]),
    ], 240_000);
    let stats: Json;
    try {
      stats = JSON.parse(await Deno.readTextFile(report)).run;
    } catch {
      console.log(run.out.slice(-3000));
      fail(`portman (${label}): no Newman report`);
      return;
    }
    const ours = stats.executions.flatMap((e: Json) =>
      (e.assertions ?? []).filter((a: Json) => a.assertion.startsWith("[tegami]")).map((
        a: Json,
      ) => ({
        name: `${e.item.name}: ${a.assertion}`,
        error: a.error,
        answer: `${e.request.method} ${urlOf(e.request.url)} → ${e.response?.code} ${
          new TextDecoder().decode(new Uint8Array(e.response?.stream?.data ?? [])).slice(0, 300)
        }`,
      }))
    );
    const failed = ours.filter((a: Json) => a.error !== undefined);
    for (const a of failed.slice(0, 30)) {
      console.log(`  ${a.name}: ${a.error.message.slice(0, 300)}\n    ${a.answer}`);
    }
    const requests = stats.stats.requests.total;
    const statuses = new Map<string, number>();
    for (const e of stats.executions) {
      const code = String(e.response?.code ?? "none");
      statuses.set(code, (statuses.get(code) ?? 0) + 1);
    }
    const spread = [...statuses].sort().map(([s, n]) => `${s}×${n}`).join(" ");
    figures.push(
      `portman+newman (${label}): ${requests} requests, ${ours.length} assertions, ${failed.length} failed; statuses ${spread}`,
    );
    if (failed.length > 0) fail(`portman (${label}): ${failed.length} assertions failed`);
    if (requests < operations().length) fail(`portman (${label}): only ${requests} requests`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/**
 * Runs `drive` with Prism's proxy in front of `upstream`, and answers Prism's log. With `errors`,
 * Prism answers any violation itself (an error body); without, it forwards everything and logs
 * each violation as `Violation: request.…` or `Violation: response.…`.
 */
async function withPrism(
  upstream: string,
  errors: boolean,
  drive: (url: string) => Promise<void>,
): Promise<string> {
  const port = freePort();
  const args = ["proxy", SPEC, upstream, "--port", String(port), "--host", "127.0.0.1"];
  if (errors) args.push("--errors");
  const child = new Deno.Command(`${BIN}/prism`, {
    args,
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", FORCE_COLOR: "0" },
  }).spawn();
  const decoder = new TextDecoder();
  let log = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) log += decoder.decode(chunk, { stream: true });
  };
  const reading = Promise.all([collect(child.stdout), collect(child.stderr)]);
  try {
    const deadline = Date.now() + 60_000;
    while (!log.includes("Prism is listening")) {
      if (Date.now() > deadline) throw new Error(`Prism did not start:\n${log}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await drive(`http://127.0.0.1:${port}`);
    await new Promise((resolve) => setTimeout(resolve, 200)); // the last log lines
    return log;
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await reading.catch(() => {});
  }
}

/** The end-to-end traffic of traffic.ts through Prism --errors: every answer is the server's. */
async function prism(upstream: string, tokens: TrafficTokens | null, label: string): Promise<void> {
  let traffic: Awaited<ReturnType<typeof driveTraffic>> | null = null;
  const log = await withPrism(upstream, true, async (url) => {
    traffic = await driveTraffic(url, tokens);
  });
  const seen = traffic!;
  const errors = log.split("\n").filter((l) => l.includes("✖") || /violation/i.test(l));
  for (const v of seen.violations.slice(0, 20)) console.log(`  ${v}`);
  for (const e of errors.slice(0, 20)) console.log(`  ${e}`);
  const operationsSeen = new Set(
    [...seen.seen.keys()].map((k) => k.split(" ").slice(0, 2).join(" ")),
  );
  const statuses = new Set([...seen.seen.keys()].map((k) => k.split(" ")[2]));
  figures.push(
    `prism proxy (${label}): ${seen.calls} calls over ${operationsSeen.size} operations ` +
      `(statuses ${[...statuses].sort().join(", ")}), ${seen.violations.length} violations`,
  );
  if (seen.violations.length > 0 || errors.length > 0) {
    fail(`prism (${label}): ${seen.violations.length} violations`);
  }
}

/**
 * The client SDK's own end-to-end tests (tests/node/client_on_node.mjs, on Node) with their HTTP
 * calls through Prism, which forwards everything and logs each violation: an answer breaking the
 * document is a failure; a request breaking it is one the tests send on purpose (a bad queue
 * name), counted and shown. The consumers' WebSockets go to the server directly.
 */
async function sdkThroughPrism(upstream: string): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "tegami-contract-sdk-" });
  try {
    const bundle = `${dir}/client.mjs`;
    const built = await exec(Deno.execPath(), [
      "bundle",
      "--platform",
      "browser",
      "--format",
      "esm",
      "-o",
      bundle,
      "lib/client/mod.ts",
    ], 60_000);
    if (built.code !== 0) throw new Error(built.out);
    let run = { code: -1, out: "" };
    const log = await withPrism(upstream, false, async (url) => {
      const child = new Deno.Command("node", {
        args: ["--experimental-websocket", "--test", `${ROOT}tests/node/client_on_node.mjs`],
        env: { TEGAMI_URL: upstream, TEGAMI_HTTP_URL: url, TEGAMI_CLIENT: `file://${bundle}` },
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
      const out = await child.output();
      clearTimeout(timer);
      const decoder = new TextDecoder();
      run = { code: out.code, out: decoder.decode(out.stdout) + decoder.decode(out.stderr) };
    });
    const lines = log.split("\n");
    const forwarded = lines.filter((l) => l.includes("Forwarding")).length;
    const responses = lines.filter((l) => /Violation: response/.test(l));
    const requests = lines.filter((l) => /Violation: request/.test(l));
    const tests = /# pass (\d+)/.exec(run.out)?.[1] ?? "?";
    for (const l of responses.slice(0, 20)) console.log(`  answer violation: ${plainLine(l)}`);
    // Prism marks these as errors; they are the tests' deliberate bad requests, so the log says
    // so rather than showing a red cross that reads like a failure.
    for (const l of requests.slice(0, 20)) {
      console.log(`  expected (a bad request the tests send on purpose): ${plainLine(l)}`);
    }
    figures.push(
      `prism proxy under the SDK's end-to-end tests (Node): ${tests} tests passed, ${forwarded} ` +
        `requests through Prism, ${responses.length} answer violations, ${requests.length} ` +
        `request violations (sent on purpose)`,
    );
    if (run.code !== 0) {
      console.log(run.out.slice(-3000));
      fail("the SDK's end-to-end tests failed through Prism");
    }
    if (responses.length > 0) fail(`prism (SDK tests): ${responses.length} answer violations`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A log line without its colour codes and Prism's level marks (`✖ error`). */
function plainLine(line: string): string {
  // deno-lint-ignore no-control-regex
  return line.replace(/\x1b\[[0-9;]*m/g, "").replace(/^.*?✖\s*(error\s*)?/, "").trim();
}

const TOKENS: TrafficTokens = {
  admin: "contract-admin-token-0123456789",
  produce: "contract-produce-token-012345678",
  consume: "contract-consume-token-012345678",
};

async function againstServer(withAuth: boolean): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "tegami-contract-" });
  const args = ["--db", `${dir}/contract.db`];
  if (withAuth) {
    await Deno.writeTextFile(
      `${dir}/tokens.json`,
      JSON.stringify([
        { name: "admin", token: TOKENS.admin, scopes: ["admin"] },
        { name: "producer", token: TOKENS.produce, scopes: ["produce"] },
        { name: "worker", token: TOKENS.consume, scopes: ["consume"], queues: ["contract.*"] },
      ]),
    );
    args.push("--tokens", `${dir}/tokens.json`);
  }
  const label = withAuth ? "auth on" : "auth off";
  await using server = await spawnServer(args);
  try {
    await prism(server.url, withAuth ? TOKENS : null, label);
    if (!withAuth) await sdkThroughPrism(server.url);
    await portman(server.url, withAuth ? TOKENS.admin : null, label);
    if (withAuth) await portman(server.url, null, "auth on, no token");
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

try {
  await Deno.stat(`${BIN}/prism`);
} catch {
  console.error(
    "The contract tools are not installed: run `npm ci --prefix tests/contract/tools` first",
  );
  Deno.exit(1);
}
const started = performance.now();
await lint();
await againstServer(false);
await againstServer(true);
console.log("\n== contract figures");
for (const line of figures) console.log(line);
console.log(`(${((performance.now() - started) / 1000).toFixed(0)} s)`);
if (failures.length > 0) {
  console.error(`\n${failures.length} contract check(s) failed:\n${failures.join("\n")}`);
  Deno.exit(1);
}
console.log("contract: all checks passed");
