import assert from "node:assert/strict";
import { runProgram, spawnServer } from "../helpers/process_server.ts";
import { send } from "../helpers/test_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// `deno compile` downloads a runtime (denort) unless DENORT_BIN points at one. This network
// cannot download it, so the test runs only where DENORT_BIN is set, and says so in its name
// and, when ignored, in the output. CI (.ci/run) does not set it.
const denort = Deno.env.get("DENORT_BIN");
if (denort === undefined) {
  console.log(
    "compile_test: SKIPPED — set DENORT_BIN to a denort binary of this Deno version to build " +
      "and test the single executable (the runtime download is not reachable here)",
  );
}

Deno.test({
  name:
    "the compiled binary (runs only with DENORT_BIN set) serves, embeds its dashboard and stops cleanly",
  ignore: denort === undefined,
  fn: async () => {
    await using tmp = await tempDir("tegami-compile-");
    const dir = tmp.path;
    const root = new URL("../..", import.meta.url).pathname;
    const binary = `${dir}/tegami`;
    const build = await new Deno.Command(Deno.execPath(), {
      args: ["task", "compile"],
      cwd: root,
      env: { DENORT_BIN: denort! },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(build.code, 0, new TextDecoder().decode(build.stderr));
    // Copy it out of the source tree, so a run-time read of a source file would fail.
    await Deno.copyFile(`${root}dist/tegami`, binary);
    await Deno.chmod(binary, 0o755);
    const version = await runProgram(["--version"], { binary });
    assert.match(version.stdout, /^tegami /);
    // Run from an empty directory: nothing may be read from the source tree.
    const server = await spawnServer(["--db", `${dir}/jobs.db`], { binary });
    const page = await fetch(server.url + "/");
    assert.match(await page.text(), /<title>tegami<\/title>/);
    const openapi = await send(server.url, "GET", "/openapi.json");
    assert.equal(openapi.body.openapi, "3.1.0", "the OpenAPI document is embedded");
    const asyncapi = await send(server.url, "GET", "/asyncapi.json");
    assert.equal(asyncapi.body.asyncapi, "3.1.0", "the AsyncAPI document is embedded");
    const enq = await send(server.url, "POST", "/v1/queues/c/jobs", { payload: 1 });
    assert.equal(enq.status, 201);
    server.kill("SIGTERM");
    assert.equal((await server.exited()).code, 0);
  },
});
