/**
 * The crash-campaign checker: reads a {@linkcode History} and reports every way the server
 * broke its promises (DESIGN §1): an acknowledged write lost, a job no one enqueued, a
 * redelivery nothing explains, a job acked twice or redelivered after a confirmed ack, a stale
 * token accepted. It is a pure function of the events, so it is tested on hand-made histories.
 *
 * A job may be delivered more than once (at-least-once), but each extra delivery needs a
 * reason, found in what happened to the delivery before it:
 *
 * - `nack`: its holder nacked it (answered `ok`, or no answer) before the redelivery arrived;
 * - `disconnect`: its holder's socket closed while its server was up, which releases leases
 *   (not a socket cut by a kill or a graceful stop of that server: those keep leases for after
 *   the restart);
 * - once its lease had run out (`expires_at`, same clock, within `toleranceMs`):
 *   `unknown ack outcome` if its holder sent an ack that got no answer, else `restart` if a
 *   server or the database was killed in between (the holder lost its socket or its ack; the
 *   lease survived and ran out), else `expiry`.
 *
 * Several servers may share one database (PostgreSQL): each server event names its `server`,
 * each socket and delivery the server it went through, and a kill explains only what it cut.
 *
 * A redelivery before the previous lease ran out with neither a nack nor a disconnect means two
 * live leases overlapped: an unexplained duplicate, which is a failure. "Previous" is by attempt,
 * not by arrival: the store counts an attempt with every claim, while the campaign's own read
 * order says little when it is starved of CPU (it then reads a burst of frames from several
 * sockets in one go, in any order, a frame that waited past its lease after the next attempt's).
 * A redelivery's arrival is still after its claim, and so after the end of the lease before it:
 * comparing the two never blames an honest server. Two deliveries with the same attempt mean
 * an attempt was not counted (or its claim lost): a protocol failure.
 *
 * An ack accepted after its lease ran out is stale, unless it repeats (same token) an earlier
 * ack that got no answer: the server answers such a replay of a committed ack with the same ok.
 *
 * @module
 */

import type { Event, SentJob } from "./history.ts";

/** Why a job was delivered again. */
export type DuplicateReason = "nack" | "disconnect" | "unknown ack outcome" | "restart" | "expiry";

/** The kinds of failure the checker reports. */
export type FindingKind =
  | "lost"
  | "unexpected"
  | "corrupt"
  | "unexplained duplicate"
  | "acked twice"
  | "redelivered after ack"
  | "stale ack accepted"
  | "not drained"
  | "integrity"
  | "protocol";

/** Every finding kind, in report order. */
export const FINDING_KINDS: readonly FindingKind[] = [
  "lost",
  "unexpected",
  "corrupt",
  "unexplained duplicate",
  "acked twice",
  "redelivered after ack",
  "stale ack accepted",
  "not drained",
  "integrity",
  "protocol",
];

/** One failure. */
export interface Finding {
  /** What kind of failure. */
  kind: FindingKind;
  /** The job concerned, when known. */
  id?: number;
  /** The uid concerned, when known. */
  uid?: string;
  /** One sentence for people. */
  detail: string;
}

/** What happened, in numbers. */
export interface Figures {
  /** Server starts, SIGKILLs, graceful stops (SIGTERM) and SIGSTOPs, of every server. */
  starts: number;
  kills: number;
  stops: number;
  pauses: number;
  /** Restarts of the database server itself. */
  store_restarts: number;
  /** Enqueue calls by outcome. */
  enqueue_calls: number;
  enqueue_ok: number;
  enqueue_failed: number;
  enqueue_unknown: number;
  /** Distinct jobs whose enqueue was acknowledged. */
  jobs_acknowledged: number;
  /** Enqueues answered `deduplicated: true`. */
  deduplicated: number;
  /** Deliveries received (WebSocket frames and HTTP leases), and distinct jobs among them. */
  deliveries: number;
  /** Deliveries that came by HTTP long-poll (a negative `conn`). */
  http_deliveries: number;
  jobs_delivered: number;
  /**
   * Deliveries read after a later attempt of the same job had been read: frames the campaign
   * got to late (judged in attempt order all the same).
   */
  read_out_of_order: number;
  /** Deliveries after the first of a job, and why. */
  duplicates: number;
  reasons: Record<DuplicateReason, number>;
  /** Acks and nacks by outcome (forged probes not included). */
  acks_ok: number;
  acks_refused: number;
  acks_unknown: number;
  /** Acks accepted with a token from before a server restart (leases survive restarts). */
  acks_across_restart: number;
  nacks_ok: number;
  nacks_refused: number;
  nacks_unknown: number;
  /** Probes with a token the server never issued, and how many were refused. */
  forged_sent: number;
  forged_refused: number;
  /** Consumer sockets opened, dropped on purpose, and lost. */
  connections: number;
  drops: number;
  lost_connections: number;
  /** Jobs in the database at the end. */
  final_jobs: number;
}

/** The checker's verdict. */
export interface CheckReport {
  /** True when there is no finding. */
  ok: boolean;
  /** Every failure, in the order found. */
  findings: Finding[];
  /** Findings per kind. */
  counts: Record<FindingKind, number>;
  /** What happened. */
  figures: Figures;
}

/** Options of {@linkcode check}. */
export interface CheckOptions {
  /** Slack when comparing a time with a lease's `expires_at`, ms. @default 5 */
  toleranceMs?: number;
  /**
   * The server deletes a job at its ack (`--retain-done 0`): a job absent from the final
   * database is not lost if an ack of it was sent with the token of its last delivery and not
   * refused (answered ok, or never answered). Any other absence still is. @default false
   */
  deletedAtAck?: boolean;
}

interface Delivery {
  at: number;
  conn: number;
  server: number;
  token: string;
  attempt: number;
  expires_at: number;
  uid: string;
  payload_ok: boolean;
}

interface Settle {
  op: number;
  at: number;
  kind: "ack" | "nack";
  id: number;
  token: string;
  forged: boolean;
  outcome: "ok" | "fail" | "info" | null;
  answered_at: number;
  code: string;
}

interface Conn {
  server: number;
  connected_at: number;
  closed_at: number | null;
  cause: "dropped" | "lost" | null;
}

/** Checks a history; see the module doc for the rules. */
export function check(events: readonly Event[], options: CheckOptions = {}): CheckReport {
  const tolerance = options.toleranceMs ?? 5;
  const findings: Finding[] = [];
  const find = (kind: FindingKind, detail: string, id?: number, uid?: string) =>
    findings.push({ kind, detail, id, uid });
  const figures: Figures = {
    starts: 0,
    kills: 0,
    stops: 0,
    pauses: 0,
    store_restarts: 0,
    enqueue_calls: 0,
    enqueue_ok: 0,
    enqueue_failed: 0,
    enqueue_unknown: 0,
    jobs_acknowledged: 0,
    deduplicated: 0,
    deliveries: 0,
    http_deliveries: 0,
    jobs_delivered: 0,
    read_out_of_order: 0,
    duplicates: 0,
    reasons: { nack: 0, disconnect: 0, "unknown ack outcome": 0, restart: 0, expiry: 0 },
    acks_ok: 0,
    acks_refused: 0,
    acks_unknown: 0,
    acks_across_restart: 0,
    nacks_ok: 0,
    nacks_refused: 0,
    nacks_unknown: 0,
    forged_sent: 0,
    forged_refused: 0,
    connections: 0,
    drops: 0,
    lost_connections: 0,
    final_jobs: 0,
  };

  /** When each server was killed or stopped, and (server -1) when the database was restarted. */
  const kills: { server: number; at: number }[] = [];
  /** Whether `server` (any, when absent) or the database was killed between `from` and `to`. */
  const killBetween = (from: number, to: number, server?: number) =>
    kills.some((k) =>
      k.at >= from && k.at <= to && (server === undefined || k.server === server || k.server < 0)
    );
  /** Whether `server` itself was killed or stopped between `from` and `to`. */
  const serverKilledBetween = (server: number, from: number, to: number) =>
    kills.some((k) => k.at >= from && k.at <= to && k.server === server);
  const enqueues = new Map<number, { jobs: SentJob[]; at: number }>();
  /** Every uid sent, with the op of its first attempt. */
  const firstOp = new Map<string, number>();
  /** Job id → the uid its creating enqueue carried (from answers that were not deduplicated). */
  const created = new Map<number, string>();
  /** Key (= uid) → the id its acknowledged enqueues answered. */
  const keyIds = new Map<string, number>();
  /** Acknowledged enqueues, `id/uid` → [id, uid] (one id may be answered for two uids). */
  const acknowledged = new Map<string, [number, string]>();
  const conns = new Map<number, Conn>();
  const deliveries = new Map<number, Delivery[]>();
  const settles = new Map<number, Settle>();
  const settlesByJob = new Map<number, Settle[]>();
  let final: Extract<Event, { type: "final" }> | null = null;

  for (const event of events) {
    switch (event.type) {
      case "server_start":
        figures.starts++;
        break;
      case "server_kill":
        figures.kills++;
        kills.push({ server: event.server ?? 0, at: event.at });
        break;
      case "server_stop":
        figures.stops++;
        // A graceful stop keeps leases too: no release on its closes.
        kills.push({ server: event.server ?? 0, at: event.at });
        break;
      case "server_exit":
        if (event.code !== 0) {
          find("protocol", `the server stopped by SIGTERM exited with code ${event.code}`);
        }
        break;
      case "server_died":
        find(
          "protocol",
          `server ${event.server ?? 0} exited by itself with code ${event.code}`,
        );
        kills.push({ server: event.server ?? 0, at: event.at }); // its leases survive it
        break;
      case "server_pause":
        figures.pauses++;
        break;
      case "store_restart":
        figures.store_restarts++;
        kills.push({ server: -1, at: event.at });
        break;
      case "server_resume":
        break;
      case "enqueue":
        figures.enqueue_calls++;
        enqueues.set(event.op, { jobs: event.jobs, at: event.at });
        for (const job of event.jobs) if (!firstOp.has(job.uid)) firstOp.set(job.uid, event.op);
        break;
      case "enqueue_ok": {
        figures.enqueue_ok++;
        const sent = enqueues.get(event.op);
        if (sent === undefined || sent.jobs.length !== event.results.length) {
          find("protocol", `enqueue op ${event.op} answered ${event.results.length} results`);
          break;
        }
        for (let i = 0; i < sent.jobs.length; i++) {
          const { uid, keyed } = sent.jobs[i];
          const { id, deduplicated } = event.results[i];
          if (deduplicated) {
            figures.deduplicated++;
            if (!keyed) {
              find("protocol", `enqueue of ${uid} without a key answered deduplicated`, id, uid);
            } else if (firstOp.get(uid) === event.op) {
              find(
                "unexpected",
                `first enqueue of ${uid} answered deduplicated with job ${id}: no such key was sent`,
                id,
                uid,
              );
            }
          } else {
            const other = created.get(id);
            if (other !== undefined && other !== uid) {
              find(
                "unexpected",
                `job id ${id} was answered for ${other} and again for ${uid}`,
                id,
                uid,
              );
            }
            created.set(id, uid);
          }
          if (keyed) {
            const before = keyIds.get(uid);
            if (before !== undefined && before !== id) {
              find("unexpected", `key ${uid} answered job ${before} and later job ${id}`, id, uid);
            }
            keyIds.set(uid, id);
          }
          acknowledged.set(`${id}/${uid}`, [id, uid]);
        }
        break;
      }
      case "enqueue_fail":
        figures.enqueue_failed++;
        if (event.status !== 503) {
          find(
            "protocol",
            `enqueue op ${event.op} was refused with ${event.status} ${event.code}`,
          );
        }
        break;
      case "enqueue_info":
        figures.enqueue_unknown++;
        break;
      case "connect":
        figures.connections++;
        conns.set(event.conn, {
          server: event.server ?? 0,
          connected_at: event.at,
          closed_at: null,
          cause: null,
        });
        break;
      case "disconnect": {
        const conn = conns.get(event.conn);
        if (conn !== undefined && conn.closed_at === null) {
          conn.closed_at = event.at;
          conn.cause = event.cause;
        }
        if (event.cause === "dropped") figures.drops++;
        else figures.lost_connections++;
        break;
      }
      case "deliver": {
        figures.deliveries++;
        if (event.conn < 0) figures.http_deliveries++;
        let list = deliveries.get(event.id);
        if (list === undefined) deliveries.set(event.id, list = []);
        list.push({
          at: event.at,
          conn: event.conn,
          server: event.server ?? 0,
          token: event.token,
          attempt: event.attempt,
          expires_at: event.expires_at,
          uid: event.uid,
          payload_ok: event.payload_ok,
        });
        break;
      }
      case "expired":
        break;
      case "settle": {
        const settle: Settle = {
          op: event.op,
          at: event.at,
          kind: event.kind,
          id: event.id,
          token: event.token,
          forged: event.forged,
          outcome: null,
          answered_at: Infinity,
          code: "",
        };
        settles.set(event.op, settle);
        let list = settlesByJob.get(event.id);
        if (list === undefined) settlesByJob.set(event.id, list = []);
        list.push(settle);
        if (event.forged) figures.forged_sent++;
        break;
      }
      case "settle_ok":
      case "settle_fail":
      case "settle_info": {
        const settle = settles.get(event.op);
        if (settle === undefined || settle.outcome !== null) {
          find("protocol", `settle op ${event.op} has no single invocation`);
          break;
        }
        settle.outcome = event.type === "settle_ok"
          ? "ok"
          : event.type === "settle_fail"
          ? "fail"
          : "info";
        settle.answered_at = event.at;
        if (event.type === "settle_fail") settle.code = event.code;
        if (settle.forged) {
          if (settle.outcome === "fail") figures.forged_refused++;
        } else {
          const counter = `${settle.kind}s_${
            { ok: "ok", fail: "refused", info: "unknown" }[settle.outcome]
          }` as keyof Figures;
          (figures[counter] as number)++;
        }
        break;
      }
      case "final":
        final = event;
        break;
    }
  }

  // ---- per job: deliveries, duplicates, settlements ----
  const completed = new Map<number, Settle>();
  for (const [id, list] of deliveries) {
    figures.jobs_delivered++;
    // In the order the store leased them: by attempt (each claim counts one), not by arrival.
    // The campaign reads its sockets whenever its event loop gets to them: starved, it reads
    // a burst of frames from several sockets at once, in no particular order, and a frame
    // whose lease ran out before it was read may be read after the next attempt's (stable:
    // equal attempts stay in arrival order, and are reported below).
    let highest = -Infinity;
    for (const d of list) {
      if (d.attempt < highest) figures.read_out_of_order++;
      highest = Math.max(highest, d.attempt);
    }
    list.sort((a, b) => a.attempt - b.attempt);
    const jobSettles = settlesByJob.get(id) ?? [];
    const tokens = new Set<string>();
    for (let k = 0; k < list.length; k++) {
      const d = list[k];
      if (tokens.has(d.token)) {
        find("protocol", `job ${id} was delivered twice with the same token`, id, d.uid);
      }
      tokens.add(d.token);
      if (!firstOp.has(d.uid)) {
        find("unexpected", `job ${id} carries ${d.uid}, which no one enqueued`, id, d.uid);
      } else if (created.has(id) && created.get(id) !== d.uid) {
        find("unexpected", `job ${id} was created for ${created.get(id)}, delivered ${d.uid}`, id);
      }
      if (!d.payload_ok) find("corrupt", `job ${id} arrived with a payload not as sent`, id, d.uid);
      if (k === 0) continue;
      const prev = list[k - 1];
      figures.duplicates++;
      if (d.attempt === prev.attempt) {
        find(
          "protocol",
          `job ${id} was delivered as attempt ${d.attempt} twice (at ${prev.at} and ${d.at}): ` +
            "an attempt that did not count",
          id,
          d.uid,
        );
      }
      const reason = duplicateReason(
        prev,
        d,
        jobSettles,
        conns,
        serverKilledBetween,
        killBetween,
        tolerance,
      );
      if (reason === null) {
        find(
          "unexplained duplicate",
          `job ${id} was delivered again at ${d.at} (attempt ${d.attempt}), ` +
            `${prev.expires_at - d.at} ms before the lease of attempt ${prev.attempt} (read at ` +
            `${prev.at}) ran out, with no nack or disconnect: two live leases overlap`,
          id,
          d.uid,
        );
      } else figures.reasons[reason]++;
    }
  }

  for (const [id, jobSettles] of settlesByJob) {
    const list = deliveries.get(id) ?? [];
    for (const s of jobSettles) {
      if (s.outcome !== "ok") continue;
      const j = list.findIndex((d) => d.token === s.token);
      if (j < 0) {
        find(
          "stale ack accepted",
          `${s.kind} of job ${id} with a token never delivered was accepted` +
            (s.forged ? " (a forged probe)" : ""),
          id,
        );
        continue;
      }
      const mine = list[j];
      // An ack sent again with the token of an earlier ack that got no answer (or ok) may be
      // answered ok after the lease ran out: the first one completed the job (a replay).
      const replay = s.kind === "ack" &&
        jobSettles.some((e) =>
          e !== s && e.kind === "ack" && e.token === s.token && e.at < s.at &&
          (e.outcome === "info" || e.outcome === "ok")
        );
      if (s.at > mine.expires_at + tolerance && !replay) {
        find(
          "stale ack accepted",
          `${s.kind} of job ${id} sent ${
            s.at - mine.expires_at
          } ms after its lease ran out was accepted`,
          id,
          mine.uid,
        );
      }
      for (let k = j + 1; k < list.length; k++) {
        const later = list[k];
        if (later.at < s.at) {
          find(
            "stale ack accepted",
            `${s.kind} of job ${id} was accepted though the job had been delivered again ` +
              `(attempt ${later.attempt}) before it was sent`,
            id,
            mine.uid,
          );
        } else if (s.kind === "ack") {
          find(
            "redelivered after ack",
            `job ${id} was delivered again (attempt ${later.attempt}) ` +
              (later.at > s.answered_at
                ? "after its ack was confirmed"
                : "while its ack was in flight"),
            id,
            mine.uid,
          );
        }
      }
      if (s.kind === "ack") {
        if (killBetween(mine.at, s.at, mine.server)) figures.acks_across_restart++;
        const before = completed.get(id);
        if (before !== undefined && before.token !== s.token) {
          find("acked twice", `job ${id} was acked by two different leases`, id, mine.uid);
        }
        completed.set(id, s);
      }
    }
  }

  // ---- the final database ----
  if (final === null) {
    find("not drained", "the history has no final snapshot of the database");
  } else {
    figures.final_jobs = final.jobs.length;
    if (final.integrity !== "ok") find("integrity", `integrity_check said: ${final.integrity}`);
    const rows = new Map(final.jobs.map((row) => [row.id, row]));
    /**
     * Whether job `id` may have been deleted by one of its acks: one not refused, with the token
     * of its last delivery (an older lease's cannot delete it).
     */
    const ackedAway = (id: number) => {
      if (options.deletedAtAck !== true) return false;
      const last = (deliveries.get(id) ?? []).reduce<Delivery | null>(
        (a, d) => a === null || d.attempt > a.attempt ? d : a,
        null,
      );
      return last !== null &&
        (settlesByJob.get(id) ?? []).some((s) =>
          s.kind === "ack" && !s.forged && s.outcome !== "fail" && s.token === last.token
        );
    };
    for (const [id, uid] of acknowledged.values()) {
      const row = rows.get(id);
      if (row === undefined && ackedAway(id)) continue;
      if (row === undefined) {
        find("lost", `acknowledged enqueue of ${uid} (job ${id}) is not in the database`, id, uid);
      } else if (row.uid !== uid) {
        find(
          "lost",
          `acknowledged enqueue of ${uid} answered job ${id}, which holds ${row.uid}`,
          id,
          uid,
        );
      }
    }
    for (const id of completed.keys()) {
      const row = rows.get(id);
      if (row === undefined && options.deletedAtAck === true) continue;
      if (row === undefined || row.state !== "done") {
        find(
          "lost",
          `job ${id} was acked (confirmed) but the database has it ${row?.state ?? "missing"}`,
          id,
          row?.uid,
        );
      }
    }
    for (const row of final.jobs) {
      if (!firstOp.has(row.uid)) {
        find("unexpected", `job ${row.id} holds ${row.uid}, which no one enqueued`, row.id);
      }
      if (row.state !== "done") {
        find("not drained", `job ${row.id} is ${row.state} after the drain`, row.id, row.uid);
      }
    }
  }
  figures.jobs_acknowledged = new Set([...acknowledged.values()].map(([id]) => id)).size;

  const counts = Object.fromEntries(FINDING_KINDS.map((k) => [k, 0])) as Record<
    FindingKind,
    number
  >;
  for (const f of findings) counts[f.kind]++;
  return { ok: findings.length === 0, findings, counts, figures };
}

/** The reason `cur` repeats `prev`, or null when nothing explains it. */
function duplicateReason(
  prev: Delivery,
  cur: Delivery,
  jobSettles: Settle[],
  conns: Map<number, Conn>,
  serverKilledBetween: (server: number, from: number, to: number) => boolean,
  killBetween: (from: number, to: number) => boolean,
  tolerance: number,
): DuplicateReason | null {
  const holderSent = (kind: "ack" | "nack", outcomes: Settle["outcome"][]) =>
    jobSettles.some((s) =>
      s.kind === kind && s.token === prev.token && s.at <= cur.at && outcomes.includes(s.outcome)
    );
  if (holderSent("nack", ["ok", "info", null])) return "nack";
  const conn = conns.get(prev.conn);
  // A socket the server cut as it stopped or died releases nothing: leases survive. One the
  // client dropped itself before the server was stopped or killed did reach it, and released its
  // leases; dropped in the very millisecond of the signal, it may have reached the server first
  // (both are events of the same moment), so only a kill strictly before the drop rules it out.
  const closedBy = conn?.cause === "dropped" && conn.closed_at !== null
    ? conn.closed_at - 1
    : conn?.closed_at;
  if (
    conn !== undefined && conn.closed_at !== null && conn.closed_at <= cur.at &&
    !serverKilledBetween(conn.server, conn.connected_at, closedBy!)
  ) {
    return "disconnect";
  }
  if (cur.at < prev.expires_at - tolerance) return null;
  if (holderSent("ack", ["info", null])) return "unknown ack outcome";
  if (killBetween(prev.at, cur.at)) return "restart";
  return "expiry";
}

/** A report as a few lines for people: figures, then the first findings of each kind. */
export function formatReport(report: CheckReport, perKind = 5): string {
  const f = report.figures;
  const reasons = Object.entries(f.reasons).map(([r, n]) => `${r} ${n}`).join(", ");
  const lines = [
    `server: ${f.starts} starts, ${f.kills} SIGKILLs, ${f.stops} SIGTERMs, ${f.pauses} SIGSTOPs; ` +
    `${f.store_restarts} database restarts`,
    `enqueue: ${f.enqueue_calls} calls, ${f.enqueue_ok} ok, ${f.enqueue_failed} failed, ` +
    `${f.enqueue_unknown} unknown; ${f.jobs_acknowledged} jobs acknowledged, ` +
    `${f.deduplicated} deduplicated`,
    `delivery: ${f.deliveries} deliveries (${f.http_deliveries} by HTTP long-poll) of ` +
    `${f.jobs_delivered} jobs, ${f.duplicates} ` +
    `duplicates (${reasons}); ${f.read_out_of_order} read after a later attempt`,
    `acks: ${f.acks_ok} ok (${f.acks_across_restart} across a restart), ${f.acks_refused} ` +
    `refused, ${f.acks_unknown} unknown; ` +
    `nacks: ${f.nacks_ok} ok, ${f.nacks_refused} refused, ${f.nacks_unknown} unknown; ` +
    `forged: ${f.forged_refused}/${f.forged_sent} refused`,
    `sockets: ${f.connections} opened, ${f.drops} dropped on purpose, ${f.lost_connections} lost; ` +
    `${f.final_jobs} jobs in the database at the end`,
    `findings: ${
      report.ok
        ? "none"
        : FINDING_KINDS.filter((k) => report.counts[k] > 0).map((k) => `${k} ${report.counts[k]}`)
          .join(", ")
    }`,
  ];
  for (const kind of FINDING_KINDS) {
    const some = report.findings.filter((x) => x.kind === kind).slice(0, perKind);
    for (const x of some) lines.push(`  ${kind}: ${x.detail}`);
  }
  return lines.join("\n");
}
