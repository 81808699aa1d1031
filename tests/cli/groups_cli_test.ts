/** `tegami enqueue --group`: the CLI's side of ordering groups. */

import assert from "node:assert/strict";
import { TegamiClient } from "../../lib/client/mod.ts";
import { programCommand } from "../helpers/process_server.ts";
import { startTestServer } from "../helpers/test_server.ts";

Deno.test("tegami enqueue --group stores the job's group", async () => {
  await using server = await startTestServer();
  const { command, prefix } = programCommand();
  const out = await new Deno.Command(command, {
    args: [...prefix, "enqueue", "--url", server.url, "--group", "acct-9", "q", '{"a":1}'],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const { id } = JSON.parse(new TextDecoder().decode(out.stdout));
  assert.equal((await new TegamiClient({ url: server.url }).get(id)).group, "acct-9");
});
