/**
 * Runs `main.ts` (or a compiled binary) as a real child process, for tests of signals, exit
 * codes and crash recovery. The bound URL is read from the startup log line.
 *
 * @module
 */

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

/** A server running in a child process. */
export interface ServerProcess extends AsyncDisposable {
  /** Base URL, read from the startup line. */
  url: string;
  /** The child. */
  child: Deno.ChildProcess;
  /** Sends a signal. */
  kill(signal: Deno.Signal): void;
  /** Waits for exit; answers the exit code and everything written to stderr. */
  exited(): Promise<{ code: number; stderr: string }>;
}

/** The command that runs the program: a compiled binary if given, else `deno run main.ts`. */
export function programCommand(
  binary?: string,
  runtimeFlags: readonly string[] = [],
  script: string = MAIN,
  permissions: readonly string[] = ["-A"],
): { command: string; prefix: string[] } {
  if (binary !== undefined) return { command: binary, prefix: [] };
  return {
    command: Deno.execPath(),
    prefix: ["run", "--config", CONFIG, ...permissions, ...runtimeFlags, script],
  };
}

/**
 * Runs the program with `args` to completion, `input` on its stdin if given; answers code,
 * stdout and stderr.
 */
export async function runProgram(
  args: string[],
  options: {
    binary?: string;
    env?: Record<string, string>;
    timeoutMs?: number;
    input?: string;
  } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { command, prefix } = programCommand(options.binary);
  const child = new Deno.Command(command, {
    args: [...prefix, ...args],
    env: options.env,
    stdin: options.input === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 20_000);
  if (options.input !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.input));
    await writer.close();
  }
  const out = await child.output();
  clearTimeout(timer);
  const decoder = new TextDecoder();
  return {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

/** The CLI as a user runs it: `tegami ARGS` with `input` on stdin and only `env` set. */
export function runCli(
  args: string[],
  input = "",
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return runProgram(args, { input, env });
}

/**
 * Starts `tegami serve` with `args` (add `--db`; `--port 0` is added) and waits until it listens.
 * `runtimeFlags` go to `deno run` (e.g. `--cpu-prof`) when no binary is given; `script` runs
 * another module in place of main.ts (the bench's runtime floor).
 */
export async function spawnServer(
  args: string[],
  options: {
    binary?: string;
    env?: Record<string, string>;
    runtimeFlags?: string[];
    script?: string;
    /** Lowers the open-file limit (soft and hard) of the server process only. */
    nofile?: number;
    /** Permission flags for `deno run`. @default ["-A"] */
    permissions?: string[];
  } = {},
): Promise<ServerProcess> {
  const { command, prefix } = programCommand(
    options.binary,
    options.runtimeFlags,
    options.script,
    options.permissions,
  );
  const serveArgs = [...prefix, "serve", "--port", "0", ...args];
  const limited = options.nofile !== undefined;
  const child = new Deno.Command(limited ? "bash" : command, {
    args: limited
      ? ["-c", `ulimit -n ${options.nofile} && exec "$0" "$@"`, command, ...serveArgs]
      : serveArgs,
    env: options.env,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const decoder = new TextDecoder();
  let stderr = "";
  const reader = child.stderr.getReader();
  let url: string | null = null;
  const deadline = Date.now() + 20_000;
  while (url === null) {
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`Server did not start in time; stderr so far:\n${stderr}`);
    }
    const { done, value } = await reader.read();
    if (done) {
      await child.status;
      throw new Error(`Server exited before listening; stderr:\n${stderr}`);
    }
    stderr += decoder.decode(value, { stream: true });
    const found = stderr.match(/url=(https?:\/\/[^\s]+)/);
    if (found !== null) url = found[1];
  }
  // Keep draining stderr so the child never blocks on a full pipe.
  const drained = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      stderr += decoder.decode(value, { stream: true });
    }
  })();
  let exit: Promise<{ code: number; stderr: string }> | null = null;
  const exited = () => {
    exit ??= (async () => {
      const status = await child.status;
      await drained;
      return { code: status.code, stderr };
    })();
    return exit;
  };
  return {
    url,
    child,
    kill: (signal) => {
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
    },
    exited,
    [Symbol.asyncDispose]: async () => {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
      await exited();
    },
  };
}
