/**
 * The descriptor limit: read from `/proc/self/limits`, or unknown with a reason the startup line
 * can show.
 */

import assert from "node:assert/strict";
import { describeDescriptorLimit, descriptorLimit } from "../../lib/observe/descriptor_limit.ts";

const LIMITS = [
  "Limit                     Soft Limit           Hard Limit           Units     ",
  "Max processes             63428                63428                processes ",
  "Max open files            4096                 524288               files     ",
].join("\n");

const throwing = (error: Error) => (): string => {
  throw error;
};

Deno.test("descriptorLimit() reads the soft limit of Max open files", () => {
  assert.deepEqual(descriptorLimit(() => LIMITS), { limit: 4096 });
  assert.equal(describeDescriptorLimit({ limit: 4096 }), 4096);
});

Deno.test("descriptorLimit() says --allow-all is needed when reading is not permitted", () => {
  const known = descriptorLimit(throwing(new Deno.errors.NotCapable("Requires all access")));
  assert.deepEqual(known, {
    limit: null,
    reason: "reading /proc/self/limits needs --allow-all",
  });
  assert.equal(
    describeDescriptorLimit(known),
    "unknown (reading /proc/self/limits needs --allow-all; the connection limit is lowered at " +
      "the first EMFILE)",
  );
});

Deno.test("descriptorLimit() names a missing file and an unlimited limit", () => {
  assert.deepEqual(descriptorLimit(throwing(new Deno.errors.NotFound("no such file"))), {
    limit: null,
    reason: "no /proc/self/limits on this system",
  });
  const unlimited = LIMITS.replace("4096 ", "unlimited ");
  assert.deepEqual(descriptorLimit(() => unlimited), { limit: null, reason: "unlimited" });
});

Deno.test("descriptorLimit() reads the real limit under --allow-all", () => {
  if (Deno.build.os !== "linux") return;
  const known = descriptorLimit();
  assert.ok(known.limit !== null && known.limit > 0, JSON.stringify(known));
});
