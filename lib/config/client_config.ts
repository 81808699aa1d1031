/**
 * The settings the client subcommands share (`enqueue`, `stats`, `job`, `dead`, `queue`,
 * `consume`): where the server is and which token to present. One flag table,
 * {@linkcode CLIENT_FLAGS}; each subcommand adds its own flags (without env vars) through `extra`.
 *
 * @module
 */

import type { ParseArgsOptionsConfig } from "node:util";
import { type ExtraValues, flag, type FlagValues, invalidFlag, resolveFlags } from "./flags.ts";

/** Every flag shared by the client subcommands, by the setting it resolves to. */
export const CLIENT_FLAGS = {
  /** Base URL of the server, `http(s)://…`, without a trailing slash. */
  url: flag.string("url", "http://127.0.0.1:7700", "server to talk to", { placeholder: "URL" }),
  /** API token, or `null` to send none. */
  token: flag.optionalString("token", "API token; needed when the server has a tokens file", {
    placeholder: "TOKEN",
  }),
};

/** Where a client subcommand finds the server. */
export type ClientConfig = FlagValues<typeof CLIENT_FLAGS>;

/** What {@linkcode resolveClientConfig} found in a client subcommand's arguments. */
export interface ClientArgs {
  /** The shared client settings. */
  config: ClientConfig;
  /** The positional arguments, in order (everything after `--` included). */
  rest: string[];
  /** The values of the subcommand's extra flags; absent ones are `undefined`. */
  values: ExtraValues;
}

/**
 * Resolves the shared client settings (`--url`, `--token`) of a client subcommand, plus the
 * subcommand's own `extra` flags (no env vars for those). Positional arguments are returned in
 * `rest`, in order.
 *
 * @throws {ConfigError} for an unknown flag, a missing value or an invalid URL.
 * @throws {TypeError} when `extra` redefines `url` or `token`.
 */
export function resolveClientConfig(
  args: string[],
  env: Record<string, string | undefined>,
  extra: ParseArgsOptionsConfig = {},
): ClientArgs {
  const resolved = resolveFlags(CLIENT_FLAGS, args, env, "tegami", extra);
  const { url, token } = resolved.values;
  let parsedUrl: URL | null = null;
  try {
    parsedUrl = new URL(url);
  } catch {
    // Reported below, with the flag's name.
  }
  if (parsedUrl === null || (parsedUrl.protocol !== "http:" && parsedUrl.protocol !== "https:")) {
    throw invalidFlag(CLIENT_FLAGS.url, `expected an http:// or https:// URL, got "${url}"`);
  }
  return {
    config: { url: url.replace(/\/+$/, ""), token },
    rest: resolved.positionals,
    values: resolved.extra,
  };
}
