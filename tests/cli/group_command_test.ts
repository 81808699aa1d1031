/**
 * `tegami group list|show|set|reset`: a group's settings through the CLI, run in process against
 * a real server: the read-change-write of `set`, `none`, `reset`, the list's pages, names that
 * need percent-encoding, tokens, and the errors (usage 2, refused by the server 1); and its help.
 */

import assert from "node:assert/strict";
import { type CommandIO, runClientCommand } from "../../lib/cli/client_commands.ts";
import { groupHelp } from "../../lib/cli/group_command.ts";
import { startTestServer } from "../helpers/test_server.ts";

/** Runs `tegami group ARGS` in this process; answers its exit code and output. */
async function group(url: string, args: string[], env: Record<string, string> = {}) {
  let stdout = "", stderr = "";
  const io: CommandIO = {
    stdin: new ReadableStream({ start: (c) => c.close() }),
    out: (text) => stdout += text,
    err: (text) => stderr += text,
    isTerminal: false,
    stdinBytes: null,
    env: { TEGAMI_URL: url, ...env },
    stopRequested: new Promise(() => {}),
  };
  const code = await runClientCommand("group", args, io);
  return { code, stdout, stderr };
}

Deno.test("tegami group show prints a group nobody configured with the defaults", async () => {
  await using server = await startTestServer();
  const result = await group(server.url, ["show", "mail", "acme"]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    result.stdout,
    [
      'group "acme" of queue mail',
      "  weight       1",
      "  concurrency  none",
      "  rate         none",
      "  configured   no (the defaults)",
      "  pending      0",
      "  leased       0",
      "  limit        1",
      "  held         -",
      "",
    ].join("\n"),
  );
});

Deno.test("tegami group set changes the settings given and keeps the others", async () => {
  await using server = await startTestServer();
  let result = await group(server.url, [
    "set",
    "mail",
    "acme",
    "--weight",
    "3",
    "--concurrency",
    "2",
  ]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /weight {7}3\n {2}concurrency {2}2\n {2}rate {9}none\n/);
  assert.match(result.stdout, /configured {3}yes\n/);
  result = await group(server.url, ["set", "mail", "acme", "--rate", "600/60s", "--json"]);
  assert.equal(result.code, 0, result.stderr);
  const shown = JSON.parse(result.stdout);
  assert.deepEqual(shown.settings, { weight: 3, concurrency: 2, rate: "600/1m" });
  result = await group(server.url, ["set", "mail", "acme", "--concurrency", "none", "--json"]);
  assert.deepEqual(JSON.parse(result.stdout).settings, {
    weight: 3,
    concurrency: null,
    rate: "600/1m",
  });
  const stored = await server.request("GET", "/v1/queues/mail/groups/acme");
  assert.deepEqual(stored.body.settings, { weight: 3, concurrency: null, rate: "600/1m" });
  result = await group(server.url, ["reset", "mail", "acme", "--json"]);
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout).settings, {
    weight: 1,
    concurrency: null,
    rate: null,
  });
  assert.equal(JSON.parse(result.stdout).configured, false);
});

Deno.test("tegami group list prints a table a page at a time, the next cursor on stderr", async () => {
  await using server = await startTestServer();
  let result = await group(server.url, ["list", "mail"]);
  assert.deepEqual([result.code, result.stdout], [0, "(no groups in mail)\n"]);
  for (const name of ["b", "a", "tenant/eu 7"]) {
    assert.equal((await group(server.url, ["set", "mail", name, "--weight", "2"])).code, 0);
  }
  await server.request("POST", "/v1/queues/mail/jobs", { payload: 1, group: "c" });
  result = await group(server.url, ["list", "mail", "--limit", "2"]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    result.stdout,
    [
      "group  weight  concurrency  rate  pending  leased  limit  held",
      "a           2         none  none        0       0      1  -",
      "b           2         none  none        0       0      1  -",
      "",
    ].join("\n"),
  );
  assert.equal(result.stderr, "more: --after b\n");
  result = await group(server.url, ["list", "mail", "--after", "b", "--json"]);
  assert.equal(result.code, 0, result.stderr);
  const lines = result.stdout.trim().split("\n").map((line) => JSON.parse(line));
  assert.deepEqual(lines.map((g) => [g.group, g.pending]), [["c", 1], ["tenant/eu 7", 0]]);
  assert.equal(result.stderr, "");
  result = await group(server.url, ["show", "mail", "tenant/eu 7", "--json"]);
  assert.equal(JSON.parse(result.stdout).group, "tenant/eu 7");
});

Deno.test("tegami group reports mistakes: usage 2, refused by the server 1", async () => {
  await using server = await startTestServer();
  const usage: [string[], RegExp][] = [
    [[], /expected one of list, show, set, reset, got nothing/],
    [["pause", "mail", "a"], /expected one of list, show, set, reset, got "pause"/],
    [["show"], /show needs a QUEUE/],
    [["show", "mail"], /show needs a GROUP/],
    [["list", "mail", "a"], /list takes no GROUP, got "a"/],
    [["set", "mail", "a"], /set needs --weight, --concurrency or --rate/],
    [["set", "mail", "a", "--weight", "heavy"], /--weight expects a number/],
    [["set", "mail", "a", "--concurrency", "2.5"], /--concurrency expects an integer or none/],
    [["show", "mail", "a", "--weight", "2"], /--weight applies to set/],
    [["show", "mail", "a", "--limit", "2"], /--limit applies to list/],
    [["list", "mail", "--limit", "x"], /--limit expects an integer from 1 to 1000/],
    [["show", "mail", ".."], /a group named "\.\." cannot be named in a URL path/],
    [["show", "mail", "a", "b"], /unexpected argument "b"/],
  ];
  for (const [args, message] of usage) {
    const result = await group(server.url, args);
    assert.equal(result.code, 2, args.join(" "));
    assert.match(result.stderr, /^tegami group: /);
    assert.match(result.stderr, message, args.join(" "));
  }
  const refused: [string[], RegExp][] = [
    [["set", "mail", "a", "--weight", "0"], /validation_failed: Invalid "weight"/],
    [["set", "mail", "a", "--rate", "fast"], /validation_failed: Invalid "rate"/],
    [["set", "mail", "a", "--concurrency", "0"], /validation_failed: Invalid "concurrency"/],
    [["show", "bad queue", "a"], /validation_failed: Invalid "queue"/],
    [["list", "mail", "--limit", "1001"], /validation_failed: Invalid "limit"/],
    [["show", "mail", "x".repeat(513)], /validation_failed: Invalid "group"/],
  ];
  for (const [args, message] of refused) {
    const result = await group(server.url, args);
    assert.equal(result.code, 1, args.join(" ").slice(0, 60));
    assert.match(result.stderr, message, args.join(" ").slice(0, 60));
  }
  const gone = await group("http://127.0.0.1:9", ["show", "mail", "a"]);
  assert.equal(gone.code, 1);
  assert.match(gone.stderr, /Cannot reach http:\/\/127\.0\.0\.1:9/);
});

Deno.test("tegami group reads with any token and changes with an admin one", async () => {
  await using server = await startTestServer({
    tokens: [
      { name: "ops", token: "cli-groups-admin-0123456789", scopes: ["admin"] },
      { name: "app", token: "cli-groups-producer-0123456789", scopes: ["produce"] },
    ],
  });
  const producer = { TEGAMI_TOKEN: "cli-groups-producer-0123456789" };
  const admin = { TEGAMI_TOKEN: "cli-groups-admin-0123456789" };
  assert.equal((await group(server.url, ["show", "mail", "a"], producer)).code, 0);
  const refused = await group(server.url, ["set", "mail", "a", "--weight", "2"], producer);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /tegami group: forbidden: /);
  const none = await group(server.url, ["list", "mail"]);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /unauthorized/);
  const done = await group(server.url, ["set", "mail", "a", "--weight", "2", "--json"], admin);
  assert.equal(done.code, 0, done.stderr);
  assert.equal(JSON.parse(done.stdout).settings.weight, 2);
});

Deno.test("groupHelp() names every subcommand and flag of tegami group", () => {
  const text = groupHelp();
  for (
    const usage of [
      "tegami group list QUEUE [--after NAME] [--limit N]",
      "tegami group show QUEUE GROUP",
      "tegami group set QUEUE GROUP [--weight W] [--concurrency N|none] [--rate R|none]",
      "tegami group reset QUEUE GROUP",
    ]
  ) assert.ok(text.includes(usage), usage);
  for (const flag of ["--weight W", "--concurrency N", "--rate R", "--json"]) {
    assert.ok(text.includes(flag), flag);
  }
  assert.ok(text.split("\n").every((line) => line.length <= 100), "lines fit 100 columns");
});
