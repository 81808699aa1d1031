/**
 * docs/sqs.md's examples run as written, pointed at a test server: the Node one (`js`, the AWS
 * SDK for JavaScript v3, run here by Deno with the repository's import map) and the Python one
 * (`python`, Debian's boto3).
 */

import assert from "node:assert/strict";
import { startTestServer } from "../helpers/test_server.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const DOC = await Deno.readTextFile(`${ROOT}docs/sqs.md`);
const DOC_URL = "http://127.0.0.1:7700";

/** The first fenced block of `language` in docs/sqs.md. */
function snippet(language: string): string {
  const match = new RegExp("```" + language + "\\n([\\s\\S]*?)```").exec(DOC);
  assert.ok(match !== null, `docs/sqs.md has no ${language} example`);
  assert.ok(match[1].includes(DOC_URL));
  return match[1];
}

async function run(command: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(command, { args, cwd: ROOT }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.ok(out.success, text + new TextDecoder().decode(out.stderr));
  return text;
}

Deno.test("docs/sqs.md's Node example sends and receives a message", async () => {
  await using server = await startTestServer({ realTime: true });
  const dir = await Deno.makeTempDir({ prefix: "tegami-sqs-doc-" });
  try {
    const file = `${dir}/example.mjs`;
    await Deno.writeTextFile(file, snippet("js").replaceAll(DOC_URL, server.url));
    const out = await run(Deno.execPath(), ["run", "-A", "--config", `${ROOT}deno.json`, file]);
    assert.equal(out.trim(), "hello");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const boto3 = new Deno.Command("/usr/bin/python3", { args: ["-c", "import boto3"] }).outputSync()
  .success;

Deno.test({
  name: "docs/sqs.md's Python example sends, receives and deletes a message",
  ignore: !boto3,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const code = snippet("python").replaceAll(DOC_URL, server.url);
    const out = await run("/usr/bin/python3", ["-c", code]);
    assert.equal(out.trim(), "hello");
    const stats = await server.request("GET", "/v1/queues/emails");
    assert.equal(stats.body.counts.done, 1);
  },
});
