import assert from "node:assert/strict";
import { check, type FindingKind } from "./checker.ts";
import { type Event, payloadFor, payloadIntact, type Unstamped } from "./history.ts";

/** Builds a history by hand: each event one ms after the last unless `at` moves the clock. */
class Script {
  readonly events: Event[] = [];
  #t = 1000;
  #op = 0;

  /** Moves the clock to `t`. */
  at(t: number): this {
    this.#t = t;
    return this;
  }

  add(event: Unstamped): this {
    this.events.push({ ...event, at: this.#t++ } as Event);
    return this;
  }

  start(epoch = 1): this {
    return this.add({ type: "server_start", epoch });
  }

  kill(epoch = 1): this {
    return this.add({ type: "server_kill", epoch });
  }

  /** Sends one job and answers it with `id` (or leaves the outcome to `outcome`). */
  enqueue(
    uid: string,
    id: number | null,
    options: { keyed?: boolean; deduplicated?: boolean; outcome?: "info" | 503 | 400 } = {},
  ): this {
    const op = ++this.#op;
    this.add({ type: "enqueue", op, jobs: [{ uid, keyed: options.keyed ?? false }], batch: false });
    if (options.outcome === "info") return this.add({ type: "enqueue_info", op, error: "reset" });
    if (options.outcome !== undefined) {
      return this.add({ type: "enqueue_fail", op, status: options.outcome, code: "x" });
    }
    return this.add({
      type: "enqueue_ok",
      op,
      results: [{ id: id!, deduplicated: options.deduplicated ?? false }],
    });
  }

  connect(conn: number): this {
    return this.add({ type: "connect", conn, consumer: conn });
  }

  disconnect(conn: number, cause: "dropped" | "lost" = "dropped"): this {
    return this.add({ type: "disconnect", conn, cause });
  }

  deliver(
    conn: number,
    id: number,
    uid: string,
    token: string,
    attempt: number,
    expires_at: number,
  ): this {
    return this.add({
      type: "deliver",
      conn,
      id,
      uid,
      token,
      attempt,
      expires_at,
      payload_ok: true,
    });
  }

  /** Sends an ack or nack and records its outcome. */
  settle(
    kind: "ack" | "nack",
    conn: number,
    id: number,
    token: string,
    outcome: "ok" | "lease_lost" | "info",
    forged = false,
  ): this {
    const op = ++this.#op;
    this.add({ type: "settle", op, conn, kind, id, token, forged });
    if (outcome === "ok") return this.add({ type: "settle_ok", op, state: "done" });
    if (outcome === "info") return this.add({ type: "settle_info", op, error: "closed" });
    return this.add({ type: "settle_fail", op, code: "lease_lost" });
  }

  final(jobs: [id: number, uid: string, state?: string][], integrity = "ok"): Event[] {
    this.add({
      type: "final",
      integrity,
      jobs: jobs.map(([id, uid, state]) => ({ id, uid, state: state ?? "done", attempts: 1 })),
    });
    return this.events;
  }
}

function kinds(events: Event[]): FindingKind[] {
  return check(events).findings.map((f) => f.kind);
}

Deno.test("check() passes a history where every acknowledged job was acked and is done", () => {
  const events = new Script().start().connect(1)
    .enqueue("a", 1).enqueue("b", 2, { keyed: true })
    .deliver(1, 1, "a", "t1", 1, 5000).settle("ack", 1, 1, "t1", "ok")
    .deliver(1, 2, "b", "t2", 1, 5000).settle("ack", 1, 2, "t2", "ok")
    .final([[1, "a"], [2, "b"]]);
  const report = check(events);
  assert.deepEqual(report.findings, []);
  assert.equal(report.ok, true);
  assert.equal(report.figures.jobs_acknowledged, 2);
  assert.equal(report.figures.acks_ok, 2);
  assert.equal(report.figures.duplicates, 0);
});

Deno.test("check() reports an acknowledged enqueue missing from the database as lost", () => {
  const events = new Script().start().enqueue("a", 1).enqueue("b", 2).kill().start(2)
    .final([[1, "a"]]);
  const report = check(events);
  assert.deepEqual(report.findings.map((f) => [f.kind, f.id]), [["lost", 2]]);
});

Deno.test("check() reports a confirmed ack whose job is not done at the end as lost", () => {
  const events = new Script().start().connect(1).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 5000).settle("ack", 1, 1, "t1", "ok")
    .final([[1, "a", "pending"]]);
  assert.deepEqual(kinds(events), ["lost", "not drained"]);
});

Deno.test("check() with deletedAtAck takes a job gone after an ack not refused as acked, others as lost", () => {
  const events = new Script().start().connect(1)
    .enqueue("a", 1).enqueue("b", 2).enqueue("c", 3).enqueue("d", 4).enqueue("e", 5)
    .deliver(1, 1, "a", "t1", 1, 5000).settle("ack", 1, 1, "t1", "ok")
    .deliver(1, 2, "b", "t2", 1, 5000).settle("ack", 1, 2, "t2", "info") // no answer: a kill
    .deliver(1, 3, "c", "t3", 1, 5000).settle("ack", 1, 3, "t3", "lease_lost")
    .deliver(1, 4, "d", "t4", 1, 5000).settle("ack", 1, 4, "forged", "lease_lost", true)
    .deliver(1, 5, "e", "t5", 1, 5000).settle("ack", 1, 5, "t5", "ok")
    .enqueue("f", 6)
    .deliver(1, 6, "f", "t6", 1, 1500).settle("ack", 1, 6, "t6", "info") // cut, its lease ran out
    .at(2000).deliver(1, 6, "f", "t6b", 2, 5000)
    .final([[5, "e"]]); // kept done (its lease was taken before a restart): fine either way
  const report = check(events, { deletedAtAck: true });
  // f's only ack carried an older lease's token: it cannot have deleted the job.
  assert.deepEqual(
    report.findings.map((f) => [f.kind, f.id]),
    [["lost", 3], ["lost", 4], ["lost", 6]],
  );
  // Without the option, every absence is a loss, and a confirmed ack needs its done row.
  assert.deepEqual(
    check(events).findings.map((f) => [f.kind, f.id]),
    [["lost", 1], ["lost", 2], ["lost", 3], ["lost", 4], ["lost", 6], ["lost", 1]],
  );
});

Deno.test("check() reports a job id answered for another uid after a crash as lost and unexpected", () => {
  // The server answered job 1 for "a", lost it in a crash, then gave id 1 to "b".
  const events = new Script().start().enqueue("a", 1).kill().start(2).enqueue("b", 1)
    .final([[1, "b"]]);
  assert.deepEqual(kinds(events), ["unexpected", "lost"]);
});

Deno.test("check() reports a delivered or stored job no one enqueued as unexpected", () => {
  const events = new Script().start().connect(1)
    .deliver(1, 7, "ghost", "t1", 1, 5000).settle("ack", 1, 7, "t1", "ok")
    .final([[7, "ghost"]]);
  assert.deepEqual(kinds(events), ["unexpected", "unexpected"]);
});

Deno.test("check() reports a payload that is not as sent as corrupt", () => {
  const script = new Script().start().connect(1).enqueue("a", 1);
  script.add({
    type: "deliver",
    conn: 1,
    id: 1,
    uid: "a",
    token: "t1",
    attempt: 1,
    expires_at: 5000,
    payload_ok: false,
  });
  const events = script.settle("ack", 1, 1, "t1", "ok").final([[1, "a"]]);
  assert.deepEqual(kinds(events), ["corrupt"]);
  assert.equal(payloadIntact(payloadFor("a")), true);
  assert.equal(payloadIntact({ ...payloadFor("a"), uid: "b" }), false);
});

Deno.test("check() gives every redelivery its reason", async (t) => {
  const cases: [string, (s: Script) => Script, string][] = [
    ["nack", (s) => s.settle("nack", 1, 1, "t1", "ok").connect(2), "nack"],
    ["nack without an answer", (s) => s.settle("nack", 1, 1, "t1", "info").connect(2), "nack"],
    ["socket dropped while the server ran", (s) => s.disconnect(1).connect(2), "disconnect"],
    ["lease ran out", (s) => s.connect(2).at(2000), "expiry"],
    [
      "server killed, lease survived and ran out",
      (s) => s.kill().disconnect(1, "lost").start(2).connect(2).at(2000),
      "restart",
    ],
    [
      "ack without an answer, lease ran out",
      (s) => s.settle("ack", 1, 1, "t1", "info").connect(2).at(2000),
      "unknown ack outcome",
    ],
  ];
  for (const [name, between, reason] of cases) {
    await t.step(name, () => {
      const script = new Script().start().connect(1).enqueue("a", 1)
        .deliver(1, 1, "a", "t1", 1, 2000);
      const events = between(script).deliver(2, 1, "a", "t2", 2, 9000)
        .settle("ack", 2, 1, "t2", "ok").final([[1, "a"]]);
      const report = check(events);
      assert.deepEqual(report.findings, []);
      assert.equal(report.figures.duplicates, 1);
      assert.equal(report.figures.reasons[reason as keyof typeof report.figures.reasons], 1);
    });
  }
});

Deno.test("check() reports a redelivery inside a live lease with no nack or disconnect", () => {
  const events = new Script().start().connect(1).connect(2).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 5000)
    .deliver(2, 1, "a", "t2", 2, 9000)
    .settle("ack", 2, 1, "t2", "ok").final([[1, "a"]]);
  const report = check(events);
  assert.deepEqual(report.findings.map((f) => f.kind), ["unexplained duplicate"]);
  assert.match(report.findings[0].detail, /two live leases overlap/);
});

Deno.test("check() takes a socket the client dropped at the moment of a stop as a disconnect", async (t) => {
  // The campaign's clients drop a socket now and then. One dropped in the very millisecond the
  // server was sent SIGTERM may have reached it before the signal did: the server then released
  // the socket's leases, as it must for a consumer that leaves, and the job comes back at once.
  const history = (signal: "server_stop" | "server_kill", dropAt: number) =>
    new Script().start().connect(1).enqueue("a", 1)
      .deliver(1, 1, "a", "t1", 1, 9000)
      .at(2000).add({ type: signal, epoch: 1 })
      .at(dropAt).disconnect(1)
      .at(2100).start(2).connect(2)
      .deliver(2, 1, "a", "t2", 2, 12000)
      .settle("ack", 2, 1, "t2", "ok").final([[1, "a"]]);
  await t.step("dropped in the millisecond of a SIGTERM: explained", () => {
    const report = check(history("server_stop", 2000));
    assert.deepEqual(report.findings, []);
    assert.equal(report.figures.reasons.disconnect, 1);
  });
  await t.step("dropped after a SIGKILL: the dead server released nothing", () => {
    const report = check(history("server_kill", 2001));
    assert.deepEqual(report.findings.map((f) => f.kind), ["unexplained duplicate"]);
  });
});

Deno.test("check() does not count a socket cut by a kill as a disconnect that releases leases", () => {
  // Leases survive a restart: a redelivery before expires_at is unexplained even though the
  // holder's socket closed (the server that would have released the lease was dead).
  const events = new Script().start().connect(1).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 5000)
    .kill().disconnect(1, "lost").start(2).connect(2)
    .deliver(2, 1, "a", "t2", 2, 9000)
    .settle("ack", 2, 1, "t2", "ok").final([[1, "a"]]);
  assert.deepEqual(kinds(events), ["unexplained duplicate"]);
});

Deno.test("check() reports a redelivery after an attempt that did not grow", () => {
  const events = new Script().start().connect(1).connect(2).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 2000).at(2000)
    .deliver(2, 1, "a", "t2", 1, 9000)
    .settle("ack", 2, 1, "t2", "ok").final([[1, "a"]]);
  assert.deepEqual(kinds(events), ["protocol"]);
});

Deno.test("check() reports an ack accepted after the job was delivered again as stale", () => {
  const events = new Script().start().connect(1).connect(2).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 2000).at(2000)
    .deliver(2, 1, "a", "t2", 2, 9000)
    .settle("ack", 1, 1, "t1", "ok") // must have been lease_lost
    .settle("ack", 2, 1, "t2", "ok")
    .final([[1, "a"]]);
  const found = kinds(events);
  assert.ok(found.includes("stale ack accepted"), found.join());
  assert.ok(found.includes("acked twice"), found.join());
});

Deno.test("check() reports an ack sent after its lease ran out and accepted as stale", () => {
  const events = new Script().start().connect(1).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 2000).at(2500)
    .settle("ack", 1, 1, "t1", "ok").final([[1, "a"]]);
  assert.deepEqual(kinds(events), ["stale ack accepted"]);
});

Deno.test("check() reports an ack with a forged token that was accepted", () => {
  const refused = new Script().start().connect(1).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 5000)
    .settle("ack", 1, 1, "forged", "lease_lost", true)
    .settle("ack", 1, 1, "t1", "ok").final([[1, "a"]]);
  const fine = check(refused);
  assert.deepEqual(fine.findings, []);
  assert.equal(fine.figures.forged_refused, 1);
  const accepted = new Script().start().connect(1).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 5000)
    .settle("ack", 1, 1, "forged", "ok", true).final([[1, "a"]]);
  assert.deepEqual(kinds(accepted), ["stale ack accepted"]);
});

Deno.test("check() reports a job delivered again after a confirmed ack", () => {
  const events = new Script().start().connect(1).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 2000).settle("ack", 1, 1, "t1", "ok").at(2000)
    .deliver(1, 1, "a", "t2", 2, 9000).settle("ack", 1, 1, "t2", "ok")
    .final([[1, "a"]]);
  const found = kinds(events);
  assert.ok(found.includes("redelivered after ack"), found.join());
  assert.ok(found.includes("acked twice"), found.join());
});

Deno.test("check() takes a repeated ack with the same token as one completion", () => {
  const events = new Script().start().connect(1).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 5000)
    .settle("ack", 1, 1, "t1", "ok").settle("ack", 1, 1, "t1", "ok")
    .final([[1, "a"]]);
  assert.deepEqual(kinds(events), []);
});

Deno.test("check() accepts a late replay of an ack whose first answer was lost", () => {
  const events = new Script().start().connect(1).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 2000).settle("ack", 1, 1, "t1", "info")
    .kill().disconnect(1, "lost").start(2).connect(2).at(3000)
    .settle("ack", 2, 1, "t1", "ok").final([[1, "a"]]);
  assert.deepEqual(kinds(events), []);
  // The same late ack with no earlier attempt is stale.
  const stale = new Script().start().connect(1).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 2000).at(3000)
    .settle("ack", 1, 1, "t1", "ok").final([[1, "a"]]);
  assert.deepEqual(kinds(stale), ["stale ack accepted"]);
});

Deno.test("check() reports leftovers after the drain, a failed integrity check and no snapshot", () => {
  const leftovers = new Script().start().enqueue("a", 1).final([[1, "a", "pending"]], "page 3");
  assert.deepEqual(kinds(leftovers), ["integrity", "not drained"]);
  const noSnapshot = new Script().start().enqueue("a", 1).events;
  assert.deepEqual(kinds(noSnapshot), ["not drained"]);
});

Deno.test("check() allows an unknown enqueue to be stored, and a keyed retry to deduplicate", () => {
  const events = new Script().start().connect(1)
    .enqueue("a", null, { outcome: "info" }).enqueue("a", 1) // unkeyed: stored twice
    .enqueue("k", null, { keyed: true, outcome: "info" })
    .enqueue("k", 3, { keyed: true, deduplicated: true })
    .enqueue("x", null, { outcome: 503 }).enqueue("x", 4)
    .deliver(1, 1, "a", "t1", 1, 9000).settle("ack", 1, 1, "t1", "ok")
    .deliver(1, 2, "a", "t2", 1, 9000).settle("ack", 1, 2, "t2", "ok")
    .deliver(1, 3, "k", "t3", 1, 9000).settle("ack", 1, 3, "t3", "ok")
    .deliver(1, 4, "x", "t4", 1, 9000).settle("ack", 1, 4, "t4", "ok")
    .final([[1, "a"], [2, "a"], [3, "k"], [4, "x"]]);
  const report = check(events);
  assert.deepEqual(report.findings, []);
  assert.equal(report.figures.enqueue_unknown, 2);
  assert.equal(report.figures.enqueue_failed, 1);
  assert.equal(report.figures.deduplicated, 1);
});

Deno.test("check() reports a first enqueue answered deduplicated and a valid enqueue refused", () => {
  const dedup = new Script().start().enqueue("k", 5, { keyed: true, deduplicated: true })
    .final([[5, "k"]]);
  assert.deepEqual(kinds(dedup), ["unexpected"]);
  const refused = new Script().start().enqueue("a", null, { outcome: 400 }).final([]);
  assert.deepEqual(kinds(refused), ["protocol"]);
});

Deno.test("check() releases leases on a socket dropped while another server was killed", () => {
  // Two servers on one database: conn 1 is on server 0, which stayed up while server 1 was
  // killed, so dropping it released its lease and the early redelivery is explained.
  const events = new Script().start().add({ type: "server_start", epoch: 2, server: 1 })
    .add({ type: "connect", conn: 1, consumer: 0, server: 0 }).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 5000)
    .add({ type: "server_kill", epoch: 2, server: 1 }).disconnect(1)
    .add({ type: "server_start", epoch: 3, server: 1 })
    .add({ type: "connect", conn: 2, consumer: 1, server: 1 })
    .deliver(2, 1, "a", "t2", 2, 9000)
    .settle("ack", 2, 1, "t2", "ok").final([[1, "a"]]);
  const report = check(events);
  assert.deepEqual(report.findings, []);
  assert.equal(report.figures.reasons.disconnect, 1);
});

Deno.test("check() does not count a socket cut by its own server's kill as a release", () => {
  // The same history with the kill on the holder's server: the lease survived, so a
  // redelivery before it ran out means two live leases.
  const events = new Script().start().add({ type: "server_start", epoch: 2, server: 1 })
    .add({ type: "connect", conn: 1, consumer: 0, server: 1 }).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 5000)
    .add({ type: "server_kill", epoch: 2, server: 1 }).disconnect(1, "lost")
    .add({ type: "connect", conn: 2, consumer: 1, server: 0 })
    .deliver(2, 1, "a", "t2", 2, 9000)
    .settle("ack", 2, 1, "t2", "ok").final([[1, "a"]]);
  assert.deepEqual(kinds(events), ["unexplained duplicate"]);
});

Deno.test("check() explains a redelivery after a database restart once the lease ran out", () => {
  const events = new Script().start().connect(1).enqueue("a", 1)
    .deliver(1, 1, "a", "t1", 1, 2000)
    .add({ type: "store_restart" }).settle("ack", 1, 1, "t1", "lease_lost")
    .at(2000).deliver(1, 1, "a", "t2", 2, 9000)
    .settle("ack", 1, 1, "t2", "ok").final([[1, "a"]]);
  const report = check(events);
  assert.deepEqual(report.findings, []);
  assert.equal(report.figures.store_restarts, 1);
  assert.equal(report.figures.reasons.restart, 1);
});

Deno.test("check() judges a job's deliveries in attempt order, not in the order they were read", () => {
  // A starved campaign reads the frames of two sockets in one burst: attempt 2 (leased once
  // attempt 1's lease ran out at 2000) is read first, attempt 1 (its lease long over) a
  // millisecond later; its ack is refused, attempt 2's accepted. Nothing is wrong.
  const events = new Script().start().connect(1).connect(2).enqueue("a", 1)
    .at(2100).deliver(2, 1, "a", "t2", 2, 2400)
    .deliver(1, 1, "a", "t1", 1, 2000)
    .settle("ack", 2, 1, "t2", "ok")
    .settle("ack", 1, 1, "t1", "lease_lost")
    .final([[1, "a"]]);
  const report = check(events);
  assert.deepEqual(report.findings, []);
  assert.equal(report.figures.duplicates, 1);
  assert.equal(report.figures.reasons.expiry, 1);
  assert.equal(report.figures.read_out_of_order, 1);
});

Deno.test("check() still finds two live leases when their frames are read out of order", () => {
  // Attempt 2 read first, attempt 1 after, and attempt 1's lease (to 5000) was live when
  // attempt 2 arrived: an overlap whichever order they are read in.
  const events = new Script().start().connect(1).connect(2).enqueue("a", 1)
    .deliver(2, 1, "a", "t2", 2, 9000)
    .deliver(1, 1, "a", "t1", 1, 5000)
    .settle("ack", 2, 1, "t2", "ok").final([[1, "a"]]);
  assert.deepEqual(kinds(events), ["unexplained duplicate"]);
});
