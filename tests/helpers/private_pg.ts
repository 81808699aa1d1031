/**
 * A PostgreSQL server of the test's own, in a temp directory, that the test may restart or
 * stop at will (`pg_ctl restart -m immediate`) without disturbing the machine's shared one.
 * Needs PostgreSQL's server binaries (`initdb`, `pg_ctl`) and, when run as root, the `postgres`
 * user to run them as.
 *
 * @module
 */

/** A private PostgreSQL server. */
export interface PrivatePg extends AsyncDisposable {
  /** `postgres://postgres@127.0.0.1:PORT/postgres`. */
  readonly url: string;
  /** Its port. */
  readonly port: number;
  /** Restarts it; `immediate` is a crash (no checkpoint, recovery at start). */
  restart(mode?: "fast" | "immediate"): Promise<void>;
  /** Stops it (its directory is removed on dispose). */
  stop(mode?: "fast" | "immediate"): Promise<void>;
  /** Starts it again after a stop. */
  start(): Promise<void>;
}

/** Where PostgreSQL's server binaries are: the newest under /usr/lib/postgresql, else PATH. */
function binDir(): string {
  try {
    const versions = [...Deno.readDirSync("/usr/lib/postgresql")].map((e) => e.name)
      .filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) return `/usr/lib/postgresql/${versions[0]}/bin/`;
  } catch {
    // not a Debian layout
  }
  return "";
}

async function run(args: string[], asPostgres: boolean): Promise<string> {
  const command = asPostgres ? "su" : args[0];
  const argv = asPostgres
    ? [
      "postgres",
      "-s",
      "/bin/sh",
      "-c",
      args.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" "),
    ]
    : args.slice(1);
  const out = await new Deno.Command(command, { args: argv, stdout: "piped", stderr: "piped" })
    .output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`${args.join(" ")} failed: ${text.trim()}`);
  return text;
}

/** Options of {@linkcode startPrivatePg}. */
export interface PrivatePgOptions {
  /**
   * More server settings (`-c name=value`), e.g. `{ ssl: "on" }`. A value naming a file written
   * by `files` may use `{dir}`, the server's own directory.
   */
  settings?: Record<string, string>;
  /**
   * Files to write into the server's directory before it starts (name → content), owned by the
   * server's user with mode 0600 — what PostgreSQL demands of `ssl_key_file`.
   */
  files?: Record<string, string>;
}

/** A TCP port free on loopback now (the kernel's pick), so a private server never meets a service. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Creates and starts a private server on `port` (by default one that is free). */
export async function startPrivatePg(
  port = freePort(),
  { settings = {}, files = {} }: PrivatePgOptions = {},
): Promise<PrivatePg> {
  const bin = binDir();
  const root = Deno.uid() === 0;
  const dir = await Deno.makeTempDir({ prefix: "tegami-pg-" });
  for (const [name, content] of Object.entries(files)) {
    await Deno.writeTextFile(`${dir}/${name}`, content, { mode: 0o600 });
    if (root) await run(["chown", "postgres", `${dir}/${name}`], false);
  }
  if (root) await run(["chown", "postgres", dir], false);
  const data = `${dir}/data`;
  await run([`${bin}initdb`, "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"], root);
  const extra = Object.entries(settings).map(([name, value]) =>
    ` -c ${name}=${value.replaceAll("{dir}", dir)}`
  ).join("");
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=on${extra}`;
  const ctl = (...args: string[]) =>
    run([`${bin}pg_ctl`, "-D", data, "-l", `${dir}/log`, "-w", "-o", options, ...args], root);
  await ctl("start");
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    restart: async (mode = "immediate") => {
      await ctl("restart", "-m", mode);
    },
    stop: async (mode = "fast") => {
      await ctl("stop", "-m", mode);
    },
    start: async () => {
      await ctl("start");
    },
    [Symbol.asyncDispose]: async () => {
      await ctl("stop", "-m", "immediate").catch(() => {});
      await Deno.remove(dir, { recursive: true });
    },
  };
}
