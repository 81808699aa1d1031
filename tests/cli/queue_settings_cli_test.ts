/**
 * `tegami queue settings`: showing a queue's settings, changing some and keeping the others,
 * `--reset`, `none`, and the errors, run in process against a real server; and its help line.
 */

import assert from "node:assert/strict";
import { TegamiClient } from "../../lib/client/mod.ts";
import { type CommandIO, runClientCommand } from "../../lib/cli/client_commands.ts";
import { programCommand } from "../helpers/process_server.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { DEFAULT_SETTINGS_JSON } from "../helpers/settings_json.ts";

/** Runs `tegami queue ARGS` in this process; answers its exit code and output. */
async function queue(url: string, args: string[]) {
  let stdout = "", stderr = "";
  const io: CommandIO = {
    stdin: new ReadableStream({ start: (c) => c.close() }),
    out: (text) => stdout += text,
    err: (text) => stderr += text,
    isTerminal: false,
    stdinBytes: null,
    env: { TEGAMI_URL: url },
    stopRequested: new Promise(() => {}),
  };
  const code = await runClientCommand("queue", args, io);
  return { code, stdout, stderr };
}

Deno.test("tegami queue settings shows a queue's settings, none for those not set", async () => {
  await using server = await startTestServer();
  const result = await queue(server.url, ["settings", "mail"]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    result.stdout,
    [
      "queue mail",
      "  concurrency        none",
      "  rate               none",
      "  group_limit        1",
      "  max_attempts       none",
      "  lease_ms           none",
      "  backoff            none",
      "  retain_done_ms     none",
      "  retain_dead_ms     none",
      "  retain_pending_ms  none",
      "  dead_letter_queue  none",
      "",
    ].join("\n"),
  );
});

Deno.test("tegami queue settings changes the settings given and keeps the others", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  let result = await queue(server.url, [
    "settings",
    "mail",
    "--concurrency",
    "4",
    "--rate",
    "100/1s",
    "--group-limit",
    "2",
    "--max-attempts",
    "3",
    "--lease",
    "45s",
    "--backoff",
    "1s,1h",
    "--retain-done",
    "2h",
    "--retain-dead",
    "7d",
    "--retain-pending",
    "4d",
    "--dead-letter-queue",
    "mail.dead",
  ]);
  assert.equal(result.code, 0, result.stderr);
  const all = {
    concurrency: 4,
    rate: "100/1s",
    group_limit: 2,
    max_attempts: 3,
    lease_ms: 45_000,
    backoff: { base_ms: 1000, max_ms: 3_600_000 },
    retain_done_ms: 7_200_000,
    retain_dead_ms: 7 * 86_400_000,
    retain_pending_ms: 4 * 86_400_000,
    dead_letter_queue: "mail.dead",
  };
  assert.deepEqual(await client.settings("mail"), all);
  result = await queue(server.url, ["settings", "mail", "--concurrency", "none", "--json"]);
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout), { ...all, concurrency: null });
  result = await queue(server.url, ["settings", "mail", "--reset", "--rate", "5/250ms"]);
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(await client.settings("mail"), { ...DEFAULT_SETTINGS_JSON, rate: "5/250ms" });
});

Deno.test("tegami queue settings reports bad values: usage 2, refused by the server 1", async () => {
  await using server = await startTestServer();
  const bad = await queue(server.url, ["settings", "mail", "--lease", "5x"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /tegami queue: Invalid --lease: Cannot parse duration "5x"/);
  const backoff = await queue(server.url, ["settings", "mail", "--backoff", "1s"]);
  assert.equal(backoff.code, 2);
  assert.match(backoff.stderr, /--backoff expects BASE,MAX/);
  const refused = await queue(server.url, ["settings", "mail", "--rate", "1/y"]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /validation_failed: Invalid "rate"/);
  const verb = await queue(server.url, ["pause", "mail"]);
  assert.equal(verb.code, 2);
  assert.match(verb.stderr, /expected settings, got "pause"/);
});

Deno.test("tegami --help lists queue settings and its flags", async () => {
  const { command, prefix } = programCommand();
  const out = await new Deno.Command(command, { args: [...prefix, "--help"], stdout: "piped" })
    .output();
  const text = new TextDecoder().decode(out.stdout);
  assert.match(text, /queue settings QUEUE +show a queue's settings/);
  assert.match(text, /--concurrency N --rate 100\/1s --group-limit N --max-attempts N/);
  assert.match(
    text,
    /Flags of the client commands \(enqueue, stats, job, dead, queue, consume, schedule, backup\)/,
  );
});
