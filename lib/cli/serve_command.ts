/**
 * `tegami serve`: resolves the configuration, starts the server, and stops it cleanly on SIGINT
 * or SIGTERM. The caller passes the arguments and the environment in (nothing under `lib/` reads
 * `Deno.args` or `Deno.env`), and may pass the store factory (tests put a faulty store there).
 *
 * @module
 */

import { ConfigError, wantsHelp } from "../config/flags.ts";
import { serveHelp } from "../config/help.ts";
import { resolveServeConfig } from "../config/serve_config.ts";
import { startServer } from "../server.ts";
import type { StoreFactory } from "../store/open_store.ts";

/** Options of {@linkcode serveCommand}. */
export interface ServeCommandOptions {
  /** The program's version, for the startup line. */
  version: string;
  /** Opens the store. @default the engine the configuration names */
  openStore?: StoreFactory;
}

/**
 * Runs the server until SIGINT or SIGTERM; answers the exit code: 0 after a clean stop, 1 when
 * it cannot start (after printing a one-line reason to stderr).
 */
export async function serveCommand(
  args: string[],
  env: Record<string, string | undefined>,
  options: ServeCommandOptions,
): Promise<number> {
  if (wantsHelp(args)) {
    console.log(serveHelp());
    return 0;
  }
  // Listen for signals before starting: a SIGTERM that lands while the server starts (or just
  // after its startup line) must still mean a clean stop, not the default kill.
  const { promise: stopped, resolve } = Promise.withResolvers<string>();
  const signals: Deno.Signal[] = ["SIGINT", "SIGTERM"];
  const handlers = signals.map((signal) => {
    const handler = () => resolve(signal);
    Deno.addSignalListener(signal, handler);
    return [signal, handler] as const;
  });
  const removeHandlers = () => {
    for (const [signal, handler] of handlers) Deno.removeSignalListener(signal, handler);
  };
  let server;
  try {
    const config = resolveServeConfig(args, env);
    server = await startServer({
      config,
      version: options.version,
      openStore: options.openStore,
    });
  } catch (error) {
    removeHandlers();
    const message = error instanceof Error ? error.message : String(error);
    console.error(`tegami: ${message.split("\n")[0]}`);
    // A mistake in the flags or the environment is not worth restarting for (a service manager
    // told to stop on exit code 2 stops); anything else may pass.
    return error instanceof ConfigError ? 2 : 1;
  }
  await stopped;
  await server.close();
  removeHandlers();
  return 0;
}
