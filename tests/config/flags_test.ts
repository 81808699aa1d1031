/**
 * The flag engine on a table of its own: one row per flag is all a new setting takes — the
 * parser, the env var, the default and the type of the resolved value all come from the row.
 */

import assert from "node:assert/strict";
import { ConfigError, flag, type FlagValues, resolveFlags } from "../../lib/config/flags.ts";

const TABLE = {
  /** A duration setting. */
  timeoutMs: flag.duration("timeout", 30_000, "how long to wait", { min: 1, max: 60_000 }),
  /** A closed set of words. */
  mode: flag.choice("mode", ["fast", "safe"], "safe", "how to run"),
  /** An optional text. */
  label: flag.optionalString("label", "a name to show"),
  /** A list turned into a count. */
  names: flag.list("names", "names, comma separated", (items) => items.length),
};

Deno.test("resolveFlags() answers every row's default, typed by its row", () => {
  const { values, texts } = resolveFlags(TABLE, [], {}, "test");
  const typed: FlagValues<typeof TABLE> = values;
  const mode: "fast" | "safe" = typed.mode;
  const label: string | null = typed.label;
  const count: number = typed.names;
  assert.deepEqual({ ...typed, mode, label, names: count }, {
    timeoutMs: 30_000,
    mode: "safe",
    label: null,
    names: 0,
  });
  assert.deepEqual(texts, { timeoutMs: null, mode: null, label: null, names: null });
});

Deno.test("resolveFlags() takes a flag over its env var, named after the flag", () => {
  assert.equal(TABLE.timeoutMs.env, "TEGAMI_TIMEOUT");
  const { values, texts } = resolveFlags(
    TABLE,
    ["--timeout", "5s", "--names=a,b,,c"],
    { TEGAMI_TIMEOUT: "1s", TEGAMI_MODE: "fast", TEGAMI_LABEL: "x" },
    "test",
  );
  assert.deepEqual(values, { timeoutMs: 5000, mode: "fast", label: "x", names: 3 });
  assert.deepEqual(texts, { timeoutMs: "5s", mode: "fast", label: "x", names: "a,b,,c" });
});

Deno.test("resolveFlags() names the flag and its env var in every refusal", () => {
  assert.throws(
    () => resolveFlags(TABLE, [], { TEGAMI_TIMEOUT: "2m" }, "test"),
    (error: unknown) =>
      error instanceof ConfigError && error.field === "timeout" &&
      /^Invalid --timeout \(TEGAMI_TIMEOUT\): expected a duration from 1ms to 1m/.test(
        error.message,
      ),
  );
  assert.throws(
    () => resolveFlags(TABLE, ["--mode", "slow"], {}, "test"),
    /Invalid --mode \(TEGAMI_MODE\): expected one of fast, safe, got "slow"/,
  );
  assert.throws(() => resolveFlags(TABLE, ["--nope"], {}, "test"), /Unknown flag --nope: see test/);
});

Deno.test("resolveFlags() passes extra flags through without env vars and refuses clashes", () => {
  const { extra, positionals } = resolveFlags(
    TABLE,
    ["run", "--quiet", "now"],
    {},
    "test",
    { quiet: { type: "boolean" } },
  );
  assert.deepEqual(extra, { quiet: true });
  assert.deepEqual(positionals, ["run", "now"]);
  assert.throws(() => resolveFlags(TABLE, [], {}, "test", { mode: { type: "string" } }), TypeError);
});
