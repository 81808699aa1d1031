/**
 * What the bench reads from `/proc`: CPU time of a process (all its threads), its resident
 * memory, and the machine's busy time, so each row can say where the CPU went.
 *
 * @module
 */

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/**
 * CPU seconds (user + system) used so far by `pid`, all its threads, or with `thread` only that
 * thread (its main thread when `thread` is `pid`); `NaN` if unreadable.
 */
export function cpuSeconds(pid: number, thread?: number): number {
  try {
    const path = thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`;
    const stat = Deno.readTextFileSync(path);
    // Fields after the command name (which may hold spaces) start after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

/**
 * Seconds thread `thread` of `pid` has spent runnable but waiting for a CPU (the second field of
 * `schedstat`): how much a busy machine held it back. `NaN` if unreadable.
 */
export function waitSeconds(pid: number, thread: number): number {
  try {
    const fields = Deno.readTextFileSync(`/proc/${pid}/task/${thread}/schedstat`).split(" ");
    return Number(fields[1]) / 1e9;
  } catch {
    return NaN;
  }
}

/** Resident set size of `pid` in bytes (`VmRSS`); `NaN` if unreadable. */
export function rssBytes(pid: number): number {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    const kib = status.match(/^VmRSS:\s+(\d+) kB/m);
    return kib === null ? NaN : Number(kib[1]) * 1024;
  } catch {
    return NaN;
  }
}

/** Machine-wide busy CPU seconds (every core, everything but idle and iowait). */
function machineBusySeconds(): number {
  const line = Deno.readTextFileSync("/proc/stat").split("\n")[0];
  // Fields: user nice system idle iowait irq softirq steal; idle and iowait are not busy.
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1)
    .map(Number);
  return (user + nice + system + irq + softirq + steal) / TICKS_PER_SECOND;
}

/**
 * CPU used over an interval, in cores (CPU seconds per wall second). A main thread near 1.0 is
 * the bottleneck of a single-threaded event loop (tegami's server and this driver both are).
 */
export interface CpuUse {
  /** The system under test, every thread of every pid it has. */
  server: number;
  /** The main thread of its first pid (tegami's JavaScript thread, which also runs SQLite). */
  serverMain: number;
  /** How long that thread was runnable but waiting for a CPU, per wall second. */
  serverMainWait: number;
  /** This driver process, every thread. */
  driver: number;
  /** The driver's main (JavaScript) thread. */
  driverMain: number;
  /** How long that thread was runnable but waiting for a CPU, per wall second. */
  driverMainWait: number;
  /** The whole machine, everything but idle and iowait (other processes included). */
  machine: number;
}

/**
 * Starts measuring CPU of `pids` (the server), the driver (this process, or the process `driver`
 * that runs the clients) and the machine; call the answer to stop. `serverMain` is measured only
 * when `singleThreaded` (the first pid's main thread does the server's work); it is `NaN`
 * otherwise.
 */
export function cpuMeter(
  pids: readonly number[],
  singleThreaded: boolean,
  driver: number = Deno.pid,
): () => CpuUse {
  const self = driver;
  const main = singleThreaded ? pids[0] : undefined;
  const read = () => ({
    server: pids.reduce((total, pid) => total + cpuSeconds(pid), 0),
    serverMain: main === undefined ? NaN : cpuSeconds(main, main),
    serverMainWait: main === undefined ? NaN : waitSeconds(main, main),
    driver: cpuSeconds(self),
    driverMain: cpuSeconds(self, self),
    driverMainWait: waitSeconds(self, self),
    machine: machineBusySeconds(),
  });
  const startedAt = performance.now();
  const before = read();
  return () => {
    const wall = (performance.now() - startedAt) / 1000;
    const after = read();
    return {
      server: (after.server - before.server) / wall,
      serverMain: (after.serverMain - before.serverMain) / wall,
      serverMainWait: (after.serverMainWait - before.serverMainWait) / wall,
      driver: (after.driver - before.driver) / wall,
      driverMain: (after.driverMain - before.driverMain) / wall,
      driverMainWait: (after.driverMainWait - before.driverMainWait) / wall,
      machine: (after.machine - before.machine) / wall,
    };
  };
}

/** Sum of the RSS of `pids`, in bytes. */
export function totalRss(pids: readonly number[]): number {
  return pids.reduce((total, pid) => total + rssBytes(pid), 0);
}

/** The first process whose command line starts with `name` (e.g. `beam.smp`), or null. */
export function findProcess(name: string): number | null {
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmd = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0")[0];
      if (cmd === name || cmd.endsWith(`/${name}`)) return Number(entry.name);
    } catch {
      // gone meanwhile
    }
  }
  return null;
}

/**
 * Bytes `pids` have caused to be written to storage so far (`write_bytes` of `/proc/PID/io`: the
 * WAL and database pages they dirtied), or null where the file cannot be read.
 */
export function writtenBytes(pids: readonly number[]): number | null {
  let total = 0;
  for (const pid of pids) {
    try {
      const io = Deno.readTextFileSync(`/proc/${pid}/io`);
      total += Number(io.match(/^write_bytes:\s+(\d+)/m)?.[1] ?? NaN);
    } catch {
      return null;
    }
  }
  return Number.isFinite(total) ? total : null;
}
