/**
 * The `tegami` program: `tegami serve` runs the server; the other commands are clients of a
 * running server. The arguments and the environment are read here, once, and handed to the
 * commands, which resolve them (flags, then `TEGAMI_*` env, then defaults); nothing under `lib/`
 * reads `Deno.args` or `Deno.env`.
 *
 * Exit codes: 0 after a clean shutdown on SIGINT/SIGTERM, 1 when the server cannot start (with
 * a one-line reason: the port is taken, another server holds the database…), 2 for a mistake in
 * the flags or the `TEGAMI_*` environment (with a one-line reason; restarting will not help).
 *
 * @module
 */

import meta from "./deno.json" with { type: "json" };
import { ConfigError, wantsHelp } from "./lib/config/flags.ts";
import { flowHelp, scheduleHelp, topLevelHelp } from "./lib/config/help.ts";
import { serveCommand } from "./lib/cli/serve_command.ts";
import { CLIENT_COMMANDS, runClientCommand } from "./lib/cli/client_commands.ts";
import { bulkHelp } from "./lib/cli/bulk_command.ts";
import { groupHelp } from "./lib/cli/group_command.ts";

/** The program's version (from deno.json, embedded at build time). */
export const VERSION: string = meta.version;

/** The size of stdin when it is a regular file (`tegami enqueue q < jobs.ndjson`), else null. */
function stdinFileSize(): number | null {
  try {
    const info = Deno.statSync("/dev/stdin"); // follows /proc/self/fd/0 to the file
    return info.isFile ? info.size : null;
  } catch {
    return null;
  }
}

/** The process's own streams and signals, for the client commands. */
function clientIO() {
  const encoder = new TextEncoder();
  const stopRequested = new Promise<void>((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) Deno.addSignalListener(signal, resolve);
  });
  return {
    stdin: Deno.stdin.readable,
    out: (text: string) => Deno.stdout.writeSync(encoder.encode(text)),
    err: (text: string) => Deno.stderr.writeSync(encoder.encode(text)),
    isTerminal: Deno.stderr.isTerminal(),
    stdinBytes: stdinFileSize(),
    env: Deno.env.toObject(),
    stopRequested,
  };
}

async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case "serve":
      return await serveCommand(rest, Deno.env.toObject(), { version: VERSION });
    case "--version":
    case "-V":
    case "version":
      console.log(`tegami ${VERSION}`);
      return 0;
    case undefined:
    case "help":
    case "--help":
    case "-h":
      console.log(topLevelHelp(VERSION));
      return 0;
    default: {
      const client = CLIENT_COMMANDS.find((name) => name === command);
      if (client === undefined) {
        console.error(`tegami: unknown command "${command}": see tegami --help`);
        return 2;
      }
      if (wantsHelp(rest)) {
        console.log(
          client === "schedule"
            ? scheduleHelp()
            : client === "bulk"
            ? bulkHelp()
            : client === "flow"
            ? flowHelp()
            : client === "group"
            ? groupHelp()
            : topLevelHelp(VERSION),
        );
        return 0;
      }
      return await runClientCommand(client, rest, clientIO());
    }
  }
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`tegami: ${error.message}`);
      Deno.exit(2);
    }
    throw error;
  }
}
