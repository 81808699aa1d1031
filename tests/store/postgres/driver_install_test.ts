/**
 * The PostgreSQL driver can be installed alone (`deno task install:postgres`): the task installs
 * exactly the version deno.json pins, and a server without the driver names that task.
 */

import assert from "node:assert/strict";
import { INSTALL_DRIVER } from "../../../lib/store/open_store.ts";

const ROOT = new URL("../../../", import.meta.url);

Deno.test("deno task install:postgres installs the driver version deno.json pins, alone", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
  const pinned = /^npm:postgres@(\d+\.\d+\.\d+)$/.exec(config.imports.postgres)?.[1];
  assert.ok(pinned !== undefined, `deno.json pins postgres: ${config.imports.postgres}`);
  const task: string = config.tasks["install:postgres"];
  assert.match(task, /^npm install --no-save --no-package-lock /);
  const packages = task.split(" ").filter((word) => !word.startsWith("-")).slice(2);
  assert.deepEqual(packages, [`postgres@${pinned}`], "the driver and nothing else");
  assert.equal(INSTALL_DRIVER, "npx --yes deno@2.9.6 task install:postgres");
});
