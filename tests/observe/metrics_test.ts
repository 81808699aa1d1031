import assert from "node:assert/strict";
import { Registry } from "../../lib/observe/metrics.ts";
import { ServerMetrics } from "../../lib/observe/server_metrics.ts";
import { DEFAULT_QUEUE_SETTINGS } from "../../lib/core/queue_settings.ts";
import { zeroCounts } from "../../lib/store/job_row.ts";
import { startTestServer } from "../helpers/test_server.ts";

interface Family {
  type: string;
  help: string;
  samples: { name: string; labels: Record<string, string>; value: number }[];
}

/** Parses Prometheus text exposition strictly enough to catch malformed output. */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  assert.ok(text.endsWith("\n"), "ends with a newline");
  for (const line of text.trimEnd().split("\n")) {
    let m = line.match(/^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/);
    if (m !== null) {
      assert.ok(!families.has(m[1]), `family ${m[1]} declared once`);
      families.set(m[1], { type: "", help: m[2], samples: [] });
      continue;
    }
    m = line.match(/^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/);
    if (m !== null) {
      const family = families.get(m[1]);
      assert.ok(family !== undefined, `TYPE of ${m[1]} follows its HELP`);
      family.type = m[2];
      continue;
    }
    m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/);
    assert.ok(m !== null, `sample line is well formed: ${line}`);
    const [, name, , labelText, valueText] = m;
    const labels: Record<string, string> = {};
    if (labelText !== undefined && labelText !== "") {
      for (const part of labelText.match(/[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"/g) ?? []) {
        const at = part.indexOf("=");
        labels[part.slice(0, at)] = JSON.parse(part.slice(at + 1));
      }
    }
    const base = name.replace(/_(bucket|sum|count)$/, "");
    const family = families.get(name) ?? families.get(base);
    assert.ok(family !== undefined, `sample ${name} belongs to a declared family`);
    const value = valueText === "+Inf" ? Infinity : Number(valueText);
    assert.ok(!Number.isNaN(value), `value of ${line} is a number`);
    family.samples.push({ name, labels, value });
  }
  for (const [name, family] of families) {
    assert.ok(name.startsWith("tegami_"), `${name} is named tegami_*`);
    assert.notEqual(family.type, "", `${name} has a TYPE`);
  }
  return families;
}

function sample(families: Map<string, Family>, name: string, labels: Record<string, string> = {}) {
  const base = name.replace(/_(bucket|sum|count)$/, "");
  const family = families.get(name) ?? families.get(base);
  return family?.samples.find((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  )?.value;
}

Deno.test("Registry renders cumulative histogram buckets ending in +Inf", () => {
  const registry = new Registry();
  const histogram = registry.histogram("tegami_test_seconds", "A test.", [0.1, 1], ["queue"]);
  histogram.observe(["a"], 0.05);
  histogram.observe(["a"], 0.5);
  histogram.observe(["a"], 5);
  const families = parseExposition(registry.render());
  assert.equal(sample(families, "tegami_test_seconds_bucket", { le: "0.1" }), 1);
  assert.equal(sample(families, "tegami_test_seconds_bucket", { le: "1" }), 2);
  assert.equal(sample(families, "tegami_test_seconds_bucket", { le: "+Inf" }), 3);
  assert.equal(sample(families, "tegami_test_seconds_count"), 3);
  assert.throws(() => registry.counter("tegami_test_seconds", "again"), /registered twice/);
});

Deno.test("/metrics exposes queue gauges, job counters, latencies and commit figures", async () => {
  await using server = await startTestServer();
  await server.request("POST", "/v1/queues/m/jobs", { payload: 1 });
  await server.request("POST", "/v1/queues/m/jobs", { payload: 2, key: "k" });
  await server.request("POST", "/v1/queues/m/jobs", { payload: 3, key: "k" });
  await server.request("POST", "/v1/queues/m/jobs", { payload: 4, delay_ms: 60_000 });
  const leased = await server.request("POST", "/v1/queues/m/leases", { max: 2, lease_ms: 1000 });
  const [a] = leased.body.jobs; // the second is left to expire
  await server.request("POST", `/v1/jobs/${a.id}/ack`, { token: a.lease.token });
  await server.advance(2000); // b's lease expires
  // The expiry is counted once its transaction is durable: under load, after the clock's turn.
  let answer: Response;
  let text: string;
  const deadline = Date.now() + 5000;
  for (;;) {
    answer = await fetch(server.url + "/metrics");
    text = await answer.text();
    if (/^tegami_expired_total\{queue="m"\} 1$/m.test(text) || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.match(answer.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  const families = parseExposition(text);
  const m = { queue: "m" };
  assert.equal(sample(families, "tegami_jobs", { queue: "m", state: "pending" }), 1);
  assert.equal(sample(families, "tegami_jobs", { queue: "m", state: "delayed" }), 1);
  assert.equal(sample(families, "tegami_jobs", { queue: "m", state: "done" }), 1);
  assert.equal(sample(families, "tegami_oldest_pending_age_seconds", m), 1); // since the expiry
  assert.equal(sample(families, "tegami_enqueued_total", m), 3);
  assert.equal(sample(families, "tegami_deduplicated_total", m), 1);
  assert.equal(sample(families, "tegami_delivered_total", m), 2);
  assert.equal(sample(families, "tegami_acked_total", m), 1);
  assert.equal(sample(families, "tegami_expired_total", m), 1);
  assert.equal(sample(families, "tegami_processing_seconds_count", m), 2);
  assert.equal(sample(families, "tegami_delivery_wait_seconds_count", m), 2);
  assert.equal(sample(families, "tegami_websocket_connections"), 0);
  assert.ok((sample(families, "tegami_commit_batch_size_count") ?? 0) > 0);
  assert.ok((sample(families, "tegami_wal_bytes") ?? -1) >= 0);
  // The process's memory, read at the scrape: the heap in use is part of the heap and of the RSS.
  const memory = (kind: string) => sample(families, "tegami_memory_bytes", { kind }) ?? NaN;
  assert.ok(memory("heap_used") > 0 && memory("heap_used") <= memory("heap_total"));
  assert.ok(memory("heap_used") < memory("rss"), "the JavaScript heap in use is resident");
  assert.ok(memory("rss") > 20 * 1024 * 1024 && memory("external") >= 0);
  assert.ok(families.has("tegami_event_loop_lag_seconds"), "event-loop lag is exported");
  assert.equal(
    sample(families, "tegami_http_requests_total", {
      route: "/v1/queues/:queue/jobs",
      status: "201",
    }),
    3,
  );
  assert.ok(
    (sample(families, "tegami_http_request_duration_seconds_count", {
      route: "/v1/jobs/:id/ack",
      status: "2xx",
    }) ?? 0) >= 1,
  );
});

Deno.test("/metrics writes 0 for a counter before its first count, so that increase() sees the first", async () => {
  await using server = await startTestServer();
  const before = parseExposition(await (await fetch(server.url + "/metrics")).text());
  assert.equal(sample(before, "tegami_commit_failures_total"), 0);
  assert.equal(sample(before, "tegami_clock_jumps_total"), 0);
  assert.equal(before.get("tegami_dead_lettered_total")!.samples.length, 0, "no queue yet");
  await server.request("POST", "/v1/queues/z/jobs", { payload: 1 });
  const after = parseExposition(await (await fetch(server.url + "/metrics")).text());
  const z = { queue: "z" };
  assert.equal(sample(after, "tegami_enqueued_total", z), 1);
  for (const name of ["tegami_dead_lettered_total", "tegami_nacked_total", "tegami_acked_total"]) {
    assert.equal(sample(after, name, z), 0, name);
  }
  assert.equal(after.get("tegami_store_statements_total")!.type, "counter");
});

Deno.test("/metrics shows how long enqueues waited at the intake gate, per queue", () => {
  const metrics = new ServerMetrics();
  metrics.intakeHeld("q", 12);
  metrics.intakeHeld("q", 80);
  const families = parseExposition(metrics.render({
    queues: [{
      name: "q",
      paused: false,
      counts: zeroCounts(),
      oldest_pending_at: null,
      settings: DEFAULT_QUEUE_SETTINGS,
      groups: { waiting: 0, leased: 0, full: 0, rate_held: 0, top_held: [] },
      rate_held: false,
    }],
    consumers: () => 0,
    connections: 0,
    now: 0,
    files: null,
  }));
  const q = { queue: "q" };
  assert.equal(sample(families, "tegami_intake_hold_seconds_count", q), 2);
  assert.equal(sample(families, "tegami_intake_hold_seconds_sum", q), 0.092);
  assert.equal(sample(families, "tegami_intake_hold_seconds_bucket", { ...q, le: "0.025" }), 1);
});

Deno.test("/metrics times each fsync of the write-ahead log apart from the commits", async () => {
  const scrape = async (url: string) =>
    parseExposition(await (await fetch(url + "/metrics")).text());
  {
    await using server = await startTestServer();
    for (let i = 0; i < 5; i++) {
      await server.request("POST", "/v1/queues/f/jobs", { payload: i });
    }
    const families = await scrape(server.url);
    const fsyncs = sample(families, "tegami_wal_fsync_duration_seconds_count") ?? 0;
    const commits = sample(families, "tegami_commit_batch_size_count") ?? 0;
    // Each enqueue was answered after its own fsync: one at least per awaited write.
    assert.ok(fsyncs >= 5, `fsyncs ${fsyncs}`);
    assert.ok(fsyncs <= commits, `fsyncs ${fsyncs} for ${commits} commits`);
    const seconds = sample(families, "tegami_wal_fsync_duration_seconds_sum") ?? -1;
    assert.ok(seconds > 0 && seconds < 5 * fsyncs, `fsync time ${seconds} s`);
  }
  {
    await using server = await startTestServer({ config: { sync: "normal" } });
    await server.request("POST", "/v1/queues/f/jobs", { payload: 1 });
    const families = await scrape(server.url);
    assert.equal(sample(families, "tegami_wal_fsync_duration_seconds_count") ?? 0, 0);
    assert.ok((sample(families, "tegami_commit_batch_size_count") ?? 0) >= 1);
  }
});

Deno.test("/metrics counts the SQL statements the store ran: a batch's jobs in a few inserts", async () => {
  await using server = await startTestServer();
  const statements = async () => {
    const text = (await server.request("GET", "/metrics")).body as string;
    return parseExposition(text).get("tegami_store_statements_total")!.samples[0].value;
  };
  const before = await statements();
  const jobs = Array.from({ length: 10 }, (_, n) => ({ payload: n }));
  assert.equal((await server.request("POST", "/v1/queues/s/jobs", { jobs })).status, 201);
  // BEGIN, two INSERTs (of 8 rows and of 2), the changes check at BEGIN and COMMIT, COMMIT: no
  // more than a few others, and far fewer than one per job.
  const ran = await statements() - before;
  assert.ok(ran >= 6 && ran <= 9, `${ran} statements for a 10-job batch`);
});
