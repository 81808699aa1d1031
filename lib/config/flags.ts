/**
 * The flag engine: a command's flags are one table of rows, and the parser, the env lookup, the
 * validation, the help text and the type of the resolved settings all come from it. A flag beats
 * its `TEGAMI_*` env var, which beats the default.
 *
 * A table is an object whose keys are the settings' names (`maxPayload`) and whose values are
 * rows built with {@linkcode flag} (`flag.size("max-payload", MiB, "…")`); {@linkcode FlagValues}
 * turns it into the settings type, so adding a flag is adding one row: no field to declare
 * twice, no cast. Doc comments written on a row's key show on the settings type.
 *
 * Nothing here reads `Deno.args` or `Deno.env`: callers pass both in.
 *
 * @module
 */

import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { formatDuration, formatSize, parseDuration, parseSize } from "./units.ts";

/** How a flag's text is read: each kind has one parser and one "expected …" message. */
export type FlagKind = "string" | "int" | "size" | "duration" | "bool" | "enum" | "list";

/** One row of a flag table; `T` is the type of its resolved value. */
export interface FlagSpec<T = unknown> {
  /** The flag without its dashes, e.g. `max-payload`. */
  readonly name: string;
  /** Its env var: `TEGAMI_` and the name in upper snake case, e.g. `TEGAMI_MAX_PAYLOAD`. */
  readonly env: string;
  /** How its text is parsed and validated. */
  readonly kind: FlagKind;
  /** The value when neither the flag nor the env var is given; `null` means none. */
  readonly default: T;
  /** One line for the help text, lower case, no final period. */
  readonly description: string;
  /** The value's name in the help text, e.g. `PATH`; by default derived from the kind. */
  readonly placeholder?: string;
  /** The values an `enum` flag accepts. */
  readonly choices?: readonly string[];
  /** The smallest value an `int`, `size` or `duration` flag accepts (inclusive). */
  readonly min?: number;
  /** The largest value an `int`, `size` or `duration` flag accepts (inclusive). */
  readonly max?: number;
  /**
   * Turns the items of a `list` flag (and the text they came from) into its value; calls `fail`
   * with the reason if it cannot.
   */
  readonly refine?: (items: string[], fail: (detail: string) => never, text: string) => T;
}

/** A command's flags, by the name of the setting each one resolves to. */
export type FlagTable = Readonly<Record<string, FlagSpec>>;

/** The settings a table resolves to: each key with its row's value type. */
export type FlagValues<T extends FlagTable> = {
  -readonly [K in keyof T]: T[K] extends FlagSpec<infer V> ? V : never;
};

/** A configuration or command-line problem, safe to print as the one-line reason for exit code 2. */
export class ConfigError extends Error {
  /** The flag at fault, without dashes (`port`); `""` for a stray positional argument. */
  readonly field: string;

  /** Makes an error about `field` with a sentence-case message. */
  constructor(field: string, message: string) {
    super(message);
    this.name = "ConfigError";
    this.field = field;
  }
}

/**
 * A client command's duration flag (`5s`, `250ms`, `1500`), or undefined when it is absent; a
 * value that does not parse is a {@linkcode ConfigError} naming the flag.
 */
export function durationFlag(value: unknown, flag: string): number | undefined {
  if (value === undefined) return undefined;
  try {
    return parseDuration(String(value));
  } catch (error) {
    throw new ConfigError(flag, `Invalid --${flag}: ${(error as Error).message}`);
  }
}

/** Range limits of a numeric flag. */
interface Range {
  /** The smallest value accepted (inclusive). */
  min?: number;
  /** The largest value accepted (inclusive). */
  max?: number;
}

/** What every builder of {@linkcode flag} may add to a row. */
interface Extras {
  /** The value's name in the help text. */
  placeholder?: string;
}

function row<T>(
  name: string,
  kind: FlagKind,
  defaultValue: T,
  description: string,
  more: Omit<FlagSpec<T>, "name" | "env" | "kind" | "default" | "description"> = {},
): FlagSpec<T> {
  // The env var is derived from the name, so the two cannot drift apart.
  const env = `TEGAMI_${name.toUpperCase().replaceAll("-", "_")}`;
  return { name, env, kind, default: defaultValue, description, ...more };
}

/** Builders of flag table rows, one per kind; each fixes the type of the value. */
export const flag = {
  /** A non-empty text with a default. */
  string: (name: string, defaultValue: string, description: string, more: Extras = {}) =>
    row<string>(name, "string", defaultValue, description, more),
  /** A non-empty text, or `null` when not given. */
  optionalString: (name: string, description: string, more: Extras = {}) =>
    row<string | null>(name, "string", null, description, more),
  /** A whole number. */
  int: (name: string, defaultValue: number, description: string, more: Range & Extras = {}) =>
    row<number>(name, "int", defaultValue, description, more),
  /** A size in bytes (`512KiB`, `1MiB` or a number of bytes). */
  size: (name: string, defaultValue: number, description: string, more: Range & Extras = {}) =>
    row<number>(name, "size", defaultValue, description, more),
  /** A duration in ms (`500ms`, `30s`, `5m` or a number of ms). */
  duration: (name: string, defaultValue: number, description: string, more: Range & Extras = {}) =>
    row<number>(name, "duration", defaultValue, description, more),
  /** A switch, off unless given (`--insecure`, or its env var set to 1/true/yes). */
  bool: (name: string, description: string) => row<boolean>(name, "bool", false, description),
  /** One of a closed set of words. */
  choice: <const C extends readonly string[]>(
    name: string,
    choices: C,
    defaultValue: C[number],
    description: string,
    more: Extras = {},
  ) => row<C[number]>(name, "enum", defaultValue, description, { ...more, choices }),
  /** A comma-separated list, turned into its value by `refine` (the default is `refine([])`). */
  list: <T>(
    name: string,
    description: string,
    refine: (items: string[], fail: (detail: string) => never, text: string) => T,
    more: Extras = {},
  ) =>
    row<T>(
      name,
      "list",
      refine([], () => {
        throw new TypeError(`Cannot build --${name}: its refine refuses the empty list`);
      }, ""),
      description,
      { ...more, refine },
    ),
};

/** `--port (TEGAMI_PORT)`, or just `--name` for a flag outside the table. */
function flagLabel(name: string, spec?: FlagSpec): string {
  return spec === undefined ? `--${name}` : `--${name} (${spec.env})`;
}

/** The error for an invalid value of `spec`: `Invalid --flag (ENV): detail`. */
export function invalidFlag(spec: FlagSpec, detail: string): ConfigError {
  return new ConfigError(spec.name, `Invalid ${flagLabel(spec.name, spec)}: ${detail}`);
}

/** Formats a value of `spec` for people, in the units the flag takes. */
export function showValue(spec: FlagSpec, value: unknown): string {
  if (value === null) return "none";
  if (Array.isArray(value)) return value.length === 0 ? "none" : value.join(",");
  if (spec.kind === "size") return formatSize(value as number);
  if (spec.kind === "duration") return formatDuration(value as number);
  return String(value);
}

/** `from 100ms to 12h` for a flag with both limits, else null. */
export function rangeText(spec: FlagSpec): string | null {
  return spec.min !== undefined && spec.max !== undefined
    ? `from ${showValue(spec, spec.min)} to ${showValue(spec, spec.max)}`
    : null;
}

const BOOL_TEXT: Readonly<Record<string, boolean>> = {
  "1": true,
  "true": true,
  "yes": true,
  "0": false,
  "false": false,
  "no": false,
};

/** The "expected …" part of an error about `spec`. */
function expected(spec: FlagSpec): string {
  const range = rangeText(spec);
  const suffix = range === null ? "" : ` ${range}`;
  switch (spec.kind) {
    case "string":
      return "a non-empty value";
    case "int":
      return `an integer${suffix}`;
    case "size":
      return `a size${suffix} (like 512KiB, 1MiB or a number of bytes)`;
    case "duration":
      return `a duration${suffix} (like 500ms, 30s, 5m, 24h or a number of ms)`;
    case "bool":
      return "one of 1, 0, true, false, yes, no";
    case "enum":
      return `one of ${spec.choices?.join(", ")}`;
    case "list":
      return "a comma-separated list";
  }
}

/** Reads one flag's text; throws a {@linkcode ConfigError} naming the flag and its env var. */
function parseValue(spec: FlagSpec, text: string): unknown {
  const fail = (): never => {
    throw invalidFlag(spec, `expected ${expected(spec)}, got "${text}"`);
  };
  const inRange = (n: number): number =>
    (spec.min !== undefined && n < spec.min) || (spec.max !== undefined && n > spec.max)
      ? fail()
      : n;
  switch (spec.kind) {
    case "string":
      return text.trim() === "" ? fail() : text;
    case "int":
      return /^\s*\d+\s*$/.test(text) && Number.isSafeInteger(Number(text))
        ? inRange(Number(text))
        : fail();
    case "size":
    case "duration": {
      let n: number;
      try {
        n = spec.kind === "size" ? parseSize(text) : parseDuration(text);
      } catch {
        return fail();
      }
      return inRange(n);
    }
    case "bool":
      return BOOL_TEXT[text.trim().toLowerCase()] ?? fail();
    case "enum": {
      const choice = text.trim().toLowerCase();
      return spec.choices?.includes(choice) ? choice : fail();
    }
    case "list": {
      const items = text.split(",").map((item) => item.trim()).filter((item) => item !== "");
      if (spec.refine === undefined) return items;
      return spec.refine(items, (detail) => {
        throw invalidFlag(spec, detail);
      }, text);
    }
  }
}

/** The `parseArgs` options of a flag table: booleans for `bool`, strings for the rest. */
function parserOptions(table: FlagTable): ParseArgsOptionsConfig {
  const options: ParseArgsOptionsConfig = {};
  for (const spec of Object.values(table)) {
    options[spec.name] = { type: spec.kind === "bool" ? "boolean" : "string" };
  }
  return options;
}

/** The values of flags outside a table (a client subcommand's own), by flag name. */
export type ExtraValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** Runs `parseArgs` in strict mode, turning its errors into {@linkcode ConfigError}s. */
function parseFlags(
  args: string[],
  options: ParseArgsOptionsConfig,
  table: FlagTable,
  command: string,
): { values: ExtraValues; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args,
      options,
      strict: true,
      allowPositionals: true,
    });
    return { values: { ...values }, positionals };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const message = error instanceof Error ? error.message : String(error);
    const written = /'(-{1,2}[^' <]+)/.exec(message)?.[1] ?? "";
    const name = written.replace(/^-+/, "");
    const spec = Object.values(table).find((s) => s.name === name);
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      throw new ConfigError(name, `Unknown flag ${written}: see ${command} --help`);
    }
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
      const detail = options[name]?.type === "boolean"
        ? `it takes no value; write ${written} alone` +
          (spec === undefined ? "" : ` or set ${spec.env}=1`)
        : `missing value (write ${written}=VALUE for a value that starts with -)`;
      throw new ConfigError(name, `Invalid ${flagLabel(name, spec)}: ${detail}`);
    }
    throw error;
  }
}

/** What {@linkcode resolveFlags} found. */
export interface ResolvedFlags<T extends FlagTable> {
  /** Every setting of the table, resolved. */
  values: FlagValues<T>;
  /** The text each setting came from (the flag's or the env var's), or null for the default. */
  texts: { [K in keyof T]: string | null };
  /** The positional arguments, in order (everything after `--` included). */
  positionals: string[];
  /** The values of the `extra` flags, by name; absent ones are `undefined`. */
  extra: ExtraValues;
}

/**
 * Parses `args` against `table` (plus `extra` flags outside it, which have no env vars) and
 * resolves every setting: the flag if given, else its env var if set and not blank, else the
 * default. Blank env vars count as unset, so `TEGAMI_TOKENS=` means "no tokens".
 *
 * @throws {ConfigError} for an unknown flag, a missing value or an invalid value; the message
 * names the flag and its env var. `command` is named in the "see … --help" hint.
 * @throws {TypeError} when `extra` redefines a flag of the table.
 */
export function resolveFlags<T extends FlagTable>(
  table: T,
  args: string[],
  env: Record<string, string | undefined>,
  command: string,
  extra: ParseArgsOptionsConfig = {},
): ResolvedFlags<T> {
  const base = parserOptions(table);
  for (const name of Object.keys(extra)) {
    if (name in base) throw new TypeError(`Cannot add flag --${name}: the table has it`);
  }
  const parsed = parseFlags(args, { ...extra, ...base }, table, command);
  const values: Record<string, unknown> = {};
  const texts: Record<string, string | null> = {};
  for (const [key, spec] of Object.entries(table)) {
    const fromFlag = parsed.values[spec.name];
    const fromEnv = env[spec.env];
    if (typeof fromFlag === "boolean") {
      values[key] = fromFlag;
      texts[key] = `--${spec.name}`;
    } else if (typeof fromFlag === "string") {
      values[key] = parseValue(spec, fromFlag);
      texts[key] = fromFlag;
    } else if (fromEnv !== undefined && fromEnv.trim() !== "") {
      values[key] = parseValue(spec, fromEnv);
      texts[key] = fromEnv;
    } else {
      values[key] = spec.default;
      texts[key] = null;
    }
  }
  const extraValues: ExtraValues = {};
  for (const name of Object.keys(extra)) extraValues[name] = parsed.values[name];
  return {
    // Each value was read by its own row, whose type parameter is the key's type in FlagValues.
    values: values as FlagValues<T>,
    texts: texts as { [K in keyof T]: string | null },
    positionals: parsed.positionals,
    extra: extraValues,
  };
}

/** Whether `args` ask for help (`--help` or `-h` before any `--`). */
export function wantsHelp(args: string[]): boolean {
  for (const arg of args) {
    if (arg === "--") return false;
    if (arg === "--help" || arg === "-h") return true;
  }
  return false;
}
