/**
 * End-to-end traffic for the contract run: every documented operation called the way a worker
 * and an operator call it (produce, dedup modes, lease, checkpoint, progress, extend, nack, ack,
 * flows, browse, run now, cancel, requeue, pause, settings, group settings, stats, health,
 * metrics, the documents), and its refusals that a valid request can still get (404, 409 and,
 * with auth, 401 and 403). Sent through Prism's validating proxy: every request here is valid by
 * the document, so any Prism error is a violation of the answer.
 *
 * @module
 */

/** The tokens of an authenticated run, or null for a server without auth. */
export interface TrafficTokens {
  /** All scopes. */
  admin: string;
  /** Only `produce`. */
  produce: string;
  /** Only `consume`, limited to queues `contract.*`. */
  consume: string;
}

/** What the traffic saw: the number of calls per `METHOD path → status`, and any violations. */
export interface TrafficResult {
  /** Calls made. */
  calls: number;
  /** Counts by `METHOD template status`. */
  seen: Map<string, number>;
  /** Answers that are not the server's (a Prism error) or that are 5xx. */
  violations: string[];
}

/** Runs the traffic against `base` (the proxy's URL). */
export async function driveTraffic(
  base: string,
  tokens: TrafficTokens | null,
): Promise<TrafficResult> {
  const result: TrafficResult = { calls: 0, seen: new Map(), violations: [] };
  const auth = (token: string | undefined): HeadersInit =>
    token === undefined ? {} : { authorization: `Bearer ${token}` };
  const admin = auth(tokens?.admin);

  const call = async (
    label: string,
    method: string,
    path: string,
    body?: unknown,
    headers: HeadersInit = admin,
    // deno-lint-ignore no-explicit-any
  ): Promise<{ status: number; body: any }> => {
    const init: RequestInit = { method, headers: new Headers(headers) };
    if (body !== undefined) {
      (init.headers as Headers).set("content-type", "application/json");
      init.body = JSON.stringify(body);
    }
    const response = await fetch(base + path, init);
    const text = await response.text();
    result.calls++;
    const key = `${method} ${label} ${response.status}`;
    result.seen.set(key, (result.seen.get(key) ?? 0) + 1);
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // text answers (metrics, the page)
    }
    const prismError = typeof parsed === "object" && parsed !== null &&
      String((parsed as { type?: unknown }).type ?? "").includes("stoplight.io/prism/errors");
    if (prismError || response.status >= 500) {
      result.violations.push(`${method} ${path} → ${response.status}: ${text.slice(0, 600)}`);
    }
    return { status: response.status, body: parsed };
  };

  const q = "contract.work";
  // Produce: one job, a batch with a duplicate key, a delayed one.
  const one = await call("/v1/queues/{queue}/jobs", "POST", `/v1/queues/${q}/jobs`, {
    payload: { to: "ana@example.com" },
    priority: 3,
    key: "k-1",
    max_attempts: 2,
    lease_ms: 60_000,
    backoff: { base_ms: 1000, max_ms: 60_000 },
  }, auth(tokens?.produce));
  await call("/v1/queues/{queue}/jobs", "POST", `/v1/queues/${q}/jobs`, {
    jobs: [{ payload: 1, key: "k-1" }, { payload: [2, "two"], key: null }, { payload: null }],
  });
  await call("/v1/queues/{queue}/jobs", "POST", `/v1/queues/${q}/jobs`, {
    jobs: [{ payload: "again", key: "k-1" }],
  });
  const delayed = await call("/v1/queues/{queue}/jobs", "POST", `/v1/queues/${q}/jobs`, {
    payload: "later",
    delay_ms: 3_600_000,
  });
  await call("/v1/queues/{queue}/jobs", "POST", `/v1/queues/${q}/jobs`, {
    payload: "at",
    run_at: Date.now() + 3_600_000,
  });
  // Dedup windows and duplicate modes: a debounced job, replaced then extended.
  await call("/v1/queues/{queue}/jobs", "POST", `/v1/queues/${q}/jobs`, {
    payload: { rev: 1 },
    key: "debounce-1",
    key_ttl_ms: 3_600_000,
    delay_ms: 3_600_000,
    on_duplicate: "replace",
  });
  await call("/v1/queues/{queue}/jobs", "POST", `/v1/queues/${q}/jobs`, {
    jobs: [
      { payload: { rev: 2 }, key: "debounce-1", delay_ms: 3_600_000, on_duplicate: "replace" },
      { payload: { rev: 3 }, key: "debounce-1", delay_ms: 7_200_000, on_duplicate: "extend" },
    ],
  });

  // Wait for a result: an enqueue whose wait runs out, and a read that waits for nothing.
  const waited = await call(
    "/v1/queues/{queue}/jobs",
    "POST",
    "/v1/queues/contract.wait/jobs?wait_ms=100",
    {
      jobs: [{ payload: 1 }, { payload: 2 }],
    },
  );
  if (waited.body.jobs?.[0]?.id !== undefined) {
    await call("/v1/jobs/{id}", "GET", `/v1/jobs/${waited.body.jobs[0].id}?wait_ms=100`);
  }
  // Consume over HTTP: lease, checkpoint, extend, read, nack, lease again, ack, repeat the ack.
  const consume = auth(tokens?.consume);
  const leased = await call("/v1/queues/{queue}/leases", "POST", `/v1/queues/${q}/leases`, {
    max: 2,
    lease_ms: 30_000,
  }, consume);
  const [first, second] = leased.body.jobs ?? [];
  if (first !== undefined) {
    const job = (action: string) => `/v1/jobs/${first.id}/${action}`;
    await call("/v1/jobs/{id}/checkpoint", "POST", job("checkpoint"), {
      token: first.lease.token,
      data: { step: "called", external: "x-1" },
    }, consume);
    await call("/v1/jobs/{id}/progress", "POST", job("progress"), {
      token: first.lease.token,
      progress: { done: 1, of: 3 },
    }, consume);
    await call("/v1/jobs/{id}/extend", "POST", job("extend"), {
      token: first.lease.token,
      lease_ms: 45_000,
    }, consume);
    await call("/v1/jobs/{id}/extend", "POST", job("extend"), { token: first.lease.token });
    await call("/v1/jobs/{id}", "GET", `/v1/jobs/${first.id}`, undefined, consume);
    await call("/v1/jobs/{id}/nack", "POST", job("nack"), {
      token: first.lease.token,
      error: "try again",
      delay_ms: 0,
    }, consume);
    await call("/v1/jobs/{id}/ack", "POST", job("ack"), { token: first.lease.token }, consume);
    const again = await call(
      "/v1/queues/{queue}/leases",
      "POST",
      `/v1/queues/${q}/leases`,
      {},
      consume,
    );
    const retry = again.body.jobs?.[0];
    if (retry !== undefined) {
      const ack = { token: retry.lease.token, result: { sent: true } };
      await call("/v1/jobs/{id}/ack", "POST", `/v1/jobs/${retry.id}/ack`, ack, consume);
      await call("/v1/jobs/{id}/ack", "POST", `/v1/jobs/${retry.id}/ack`, ack, consume);
      await call("/v1/jobs/{id}", "GET", `/v1/jobs/${retry.id}`);
      await call("/v1/jobs/{id}", "GET", `/v1/jobs/${retry.id}?wait_ms=60000`);
    }
  }
  if (second !== undefined) {
    await call("/v1/jobs/{id}/nack", "POST", `/v1/jobs/${second.id}/nack`, {
      token: second.lease.token,
      error: "no such recipient",
      dead: true,
    }, consume);
    await call("/v1/jobs/{id}/checkpoint", "POST", `/v1/jobs/${second.id}/checkpoint`, {
      token: second.lease.token,
      data: null,
    }, consume);
  }
  // A long-poll that waits, and one that is woken by an enqueue.
  await call("/v1/queues/{queue}/leases", "POST", "/v1/queues/contract.empty/leases", {
    wait_ms: 200,
  }, consume);
  const woken = call("/v1/queues/{queue}/leases", "POST", "/v1/queues/contract.poll/leases", {
    wait_ms: 5000,
    max: 10,
  }, consume);
  await new Promise((resolve) => setTimeout(resolve, 100));
  await call("/v1/queues/{queue}/jobs", "POST", "/v1/queues/contract.poll/jobs", {
    payload: "wake",
  });
  const polled = (await woken).body.jobs?.[0];
  if (polled !== undefined) {
    await call("/v1/jobs/{id}", "DELETE", `/v1/jobs/${polled.id}`);
  }

  // Operate: stats, browse every state both ways, run now, requeue, cancel, remove, pause.
  await call("/v1/queues", "GET", "/v1/queues");
  await call("/v1/queues", "GET", "/v1/queues?limit=1");
  await call("/v1/queues", "GET", `/v1/queues?limit=2&after=${q}`);
  await call("/v1/queues/{queue}", "GET", `/v1/queues/${q}`, undefined, consume);
  await call("/v1/queues/{queue}", "GET", "/v1/queues/contract.nothing");
  for (const state of ["blocked", "pending", "delayed", "leased", "done", "dead", "cancelled"]) {
    for (const order of ["oldest", "newest"]) {
      const page = await call(
        "/v1/queues/{queue}/jobs",
        "GET",
        `/v1/queues/${q}/jobs?state=${state}&order=${order}&limit=2`,
      );
      if (page.body.next_after !== null && page.body.next_after !== undefined) {
        await call(
          "/v1/queues/{queue}/jobs",
          "GET",
          `/v1/queues/${q}/jobs?state=${state}&order=${order}&limit=2&after=${page.body.next_after}`,
        );
      }
    }
  }
  await call("/v1/queues/{queue}/dead", "GET", `/v1/queues/${q}/dead?limit=10`);
  await call("/v1/queues/{queue}/dead", "GET", `/v1/queues/${q}/dead?limit=1&after=0`);
  if (delayed.body.id !== undefined) {
    await call("/v1/jobs/{id}/run", "POST", `/v1/jobs/${delayed.body.id}/run`);
    await call("/v1/jobs/{id}/run", "POST", `/v1/jobs/${delayed.body.id}/run`, {});
  }
  if (first !== undefined) await call("/v1/jobs/{id}/run", "POST", `/v1/jobs/${first.id}/run`);
  if (second !== undefined) {
    await call("/v1/queues/{queue}/dead/requeue", "POST", `/v1/queues/${q}/dead/requeue`, {
      ids: [second.id, 999_999],
    });
  }
  await call("/v1/queues/{queue}/dead/requeue", "POST", `/v1/queues/${q}/dead/requeue`);
  if (one.body.id !== undefined) {
    await call("/v1/jobs/{id}", "DELETE", `/v1/jobs/${one.body.id}`);
  }
  if (delayed.body.id !== undefined) {
    await call("/v1/jobs/{id}", "DELETE", `/v1/jobs/${delayed.body.id}`);
    await call("/v1/jobs/{id}", "DELETE", `/v1/jobs/${delayed.body.id}`);
    await call("/v1/jobs/{id}", "DELETE", `/v1/jobs/${delayed.body.id}`);
  }
  // Bulk actions: a dry run and a real one, followed, listed and stopped; an unknown task.
  const dry = await call("/v1/queues/{queue}/bulk", "POST", `/v1/queues/${q}/bulk`, {
    action: "replay",
    dry_run: true,
    filter: { states: ["done"], payload: { path: "to", equals: "contract@example.com" } },
  });
  await call("/v1/queues/{queue}/bulk", "POST", `/v1/queues/${q}/bulk`, {
    action: "cancel",
    filter: { states: ["pending"], created_to: Date.now() - 3_600_000 },
  });
  await call("/v1/bulk", "GET", "/v1/bulk");
  if (dry.body.id !== undefined) {
    await call("/v1/bulk/{id}", "GET", `/v1/bulk/${dry.body.id}`);
    await call("/v1/bulk/{id}", "DELETE", `/v1/bulk/${dry.body.id}`);
  }
  await call("/v1/bulk/{id}", "GET", "/v1/bulk/999999");
  // Flows: create (and again, deduplicated), a refused graph, run a node that adds nodes and
  // one that carries its prerequisites' outcomes, read, page, cancel.
  const fq = "contract.flow";
  const flowBody = {
    key: "contract-flow-1",
    nodes: [
      { ref: "fetch", queue: fq, payload: { url: "https://example.com/a.png" }, priority: 2 },
      { ref: "resize", queue: fq, payload: { size: 512 }, depends_on: ["fetch"] },
      {
        ref: "notify",
        queue: fq,
        payload: null,
        max_attempts: 1,
        depends_on: [{ ref: "resize", on_failure: "run" }, { ref: "fetch", on_failure: null }],
      },
    ],
  };
  const flow = await call("/v1/flows", "POST", "/v1/flows", flowBody, auth(tokens?.produce));
  await call("/v1/flows", "POST", "/v1/flows", flowBody, auth(tokens?.produce));
  await call("/v1/flows", "POST", "/v1/flows", {
    nodes: [
      { ref: "a", queue: fq, payload: 1, depends_on: ["b"] },
      { ref: "b", queue: fq, payload: 1, depends_on: ["a"] },
    ],
  });
  const fetched = (await call("/v1/queues/{queue}/leases", "POST", `/v1/queues/${fq}/leases`, {
    max: 1,
  }, consume)).body.jobs?.[0];
  if (fetched !== undefined) {
    const more = {
      token: fetched.lease.token,
      nodes: [
        { ref: "page-1", queue: fq, payload: 1 },
        { ref: "merge", queue: fq, payload: 2, depends_on: ["page-1", "fetch"] },
      ],
    };
    await call("/v1/jobs/{id}/flow", "POST", `/v1/jobs/${fetched.id}/flow`, more, consume);
    await call("/v1/jobs/{id}/flow", "POST", `/v1/jobs/${fetched.id}/flow`, more);
    await call("/v1/jobs/{id}/flow", "POST", `/v1/jobs/${fetched.id}/flow`, more);
    await call("/v1/jobs/{id}/ack", "POST", `/v1/jobs/${fetched.id}/ack`, {
      token: fetched.lease.token,
      result: { bytes: 48213 },
    }, consume);
    await call("/v1/jobs/{id}/flow", "POST", `/v1/jobs/${fetched.id}/flow`, more);
    const next = await call("/v1/queues/{queue}/leases", "POST", `/v1/queues/${fq}/leases`, {
      max: 10,
    }, consume);
    for (const delivery of next.body.jobs ?? []) {
      await call("/v1/jobs/{id}/ack", "POST", `/v1/jobs/${delivery.id}/ack`, {
        token: delivery.lease.token,
      }, consume);
    }
  }
  await call("/v1/jobs/{id}/flow", "POST", "/v1/jobs/987654/flow", {
    token: "nope",
    nodes: [{ ref: "x", queue: fq, payload: 1 }],
  });
  if (flow.body.id !== undefined) {
    const path = `/v1/flows/${flow.body.id}`;
    await call("/v1/flows/{id}", "GET", path, undefined, consume);
    await call("/v1/flows", "GET", "/v1/flows");
    await call("/v1/flows", "GET", "/v1/flows?limit=1");
    await call("/v1/flows", "GET", `/v1/flows?limit=1&after=${flow.body.id}`);
    await call("/v1/flows", "GET", "/v1/flows?order=newest&limit=1");
    await call("/v1/queues/{queue}/jobs", "GET", `/v1/queues/${fq}/jobs?state=blocked`);
    await call("/v1/flows/{id}", "DELETE", path);
    await call("/v1/flows/{id}", "DELETE", path);
    await call("/v1/flows/{id}", "GET", path);
  }
  await call("/v1/flows/{id}", "GET", "/v1/flows/999999");
  await call("/v1/flows/{id}", "DELETE", "/v1/flows/999999");
  await call("/v1/queues/{queue}/pause", "POST", `/v1/queues/${q}/pause`);
  await call("/v1/queues/{queue}/leases", "POST", `/v1/queues/${q}/leases`, { max: 100 }, consume);
  await call("/v1/queues/{queue}/resume", "POST", `/v1/queues/${q}/resume`, {});
  await call("/v1/queues/{queue}/settings", "PUT", `/v1/queues/${q}/settings`, {
    concurrency: 10,
    rate: "100/1s",
    max_attempts: 3,
    backoff: { base_ms: 100, max_ms: 1000 },
    retain_done_ms: 3_600_000,
  });
  await call("/v1/queues/{queue}/settings", "GET", `/v1/queues/${q}/settings`);
  await call("/v1/queues/{queue}/settings", "PUT", `/v1/queues/${q}/settings`, {});
  // Fair shares: a group's settings put, read, listed a page at a time and reset, for a group
  // with jobs pending and leased, held by its rate.
  const gq = "contract.groups";
  const group = (name: string) => `/v1/queues/${gq}/groups/${encodeURIComponent(name)}`;
  await call("/v1/queues/{queue}/groups/{group}", "PUT", group("acme/eu 1"), {
    weight: 3,
    concurrency: 2,
    rate: "1/1m",
  });
  await call("/v1/queues/{queue}/groups/{group}", "PUT", group("globex"), { weight: 0.5 });
  await call("/v1/queues/{queue}/jobs", "POST", `/v1/queues/${gq}/jobs`, {
    jobs: [{ payload: 1, group: "acme/eu 1" }, { payload: 2, group: "acme/eu 1" }],
  });
  await call("/v1/queues/{queue}/leases", "POST", `/v1/queues/${gq}/leases`, { max: 10 });
  await call("/v1/queues/{queue}/groups/{group}", "GET", group("acme/eu 1"));
  await call("/v1/queues/{queue}/groups/{group}", "GET", group("nobody"));
  await call("/v1/queues/{queue}/groups", "GET", `/v1/queues/${gq}/groups`);
  await call("/v1/queues/{queue}/groups", "GET", `/v1/queues/${gq}/groups?limit=1`);
  await call("/v1/queues/{queue}/groups", "GET", `/v1/queues/${gq}/groups?limit=1&after=acme`);
  await call("/v1/queues/{queue}", "GET", `/v1/queues/${gq}`);
  await call("/v1/queues/{queue}/groups/{group}", "PUT", group("globex"), {});
  await call("/v1/queues/{queue}/groups/{group}", "DELETE", group("acme/eu 1"));
  // Schedules: define, replace, read, list, pause, resume, delete; refused definitions.
  const sched = (name: string) => `/v1/schedules/${name}`;
  const definition = {
    queue: q,
    cron: "*/2 * * * * *",
    timezone: "Europe/Berlin",
    payload: { kind: "tick" },
    priority: 1,
    max_attempts: 3,
    lease_ms: 5000,
    backoff: { base_ms: 100, max_ms: 1000 },
    missed: "all",
  };
  await call("/v1/schedules/{name}", "PUT", sched("contract.tick"), definition);
  await call("/v1/schedules/{name}", "PUT", sched("contract.tick"), {
    ...definition,
    cron: "0 3 * * *",
    missed: null,
    timezone: null,
  });
  await call("/v1/schedules/{name}", "PUT", sched("contract.bad"), {
    ...definition,
    cron: "61 * * * *",
  });
  await call("/v1/schedules/{name}", "PUT", sched("contract.bad"), {
    ...definition,
    timezone: "X/Y",
  });
  await call("/v1/schedules/{name}", "GET", sched("contract.tick"), undefined, consume);
  await call("/v1/schedules/{name}", "GET", sched("contract.none"));
  await call("/v1/schedules", "GET", "/v1/schedules", undefined, consume);
  await call("/v1/schedules", "GET", "/v1/schedules?limit=1", undefined, consume);
  await call("/v1/schedules/{name}/pause", "POST", `${sched("contract.tick")}/pause`);
  await call("/v1/schedules/{name}/resume", "POST", `${sched("contract.tick")}/resume`, {});
  await call("/v1/schedules/{name}/pause", "POST", `${sched("contract.none")}/pause`);
  await call("/v1/schedules/{name}", "DELETE", sched("contract.tick"));
  await call("/v1/schedules/{name}", "DELETE", sched("contract.tick"));

  await call("/healthz", "GET", "/healthz", undefined, {});
  await call("/readyz", "GET", "/readyz", undefined, {});
  await call("/metrics", "GET", "/metrics");
  await call("/", "GET", "/", undefined, {});
  await call("/dashboard.js", "GET", "/dashboard.js", undefined, {});
  await call("/dashboard.css", "GET", "/dashboard.css", undefined, {});
  await call("/openapi.json", "GET", "/openapi.json", undefined, {});
  await call("/asyncapi.json", "GET", "/asyncapi.json", undefined, {});

  // Valid requests the server refuses: unknown jobs, stale tokens, a state run cannot apply to.
  await call("/v1/jobs/{id}", "GET", "/v1/jobs/987654");
  await call("/v1/jobs/{id}", "DELETE", "/v1/jobs/987654");
  await call("/v1/jobs/{id}/ack", "POST", "/v1/jobs/987654/ack", { token: "nope" }, consume);
  await call("/v1/jobs/{id}/run", "POST", "/v1/jobs/987654/run");
  const stale = await call("/v1/queues/{queue}/jobs", "POST", "/v1/queues/contract.stale/jobs", {
    payload: 1,
  });
  if (stale.body.id !== undefined) {
    const path = (a: string) => `/v1/jobs/${stale.body.id}/${a}`;
    await call("/v1/jobs/{id}/ack", "POST", path("ack"), { token: "not-the-token" }, consume);
    await call("/v1/jobs/{id}/nack", "POST", path("nack"), { token: "not-the-token" }, consume);
    await call("/v1/jobs/{id}/extend", "POST", path("extend"), { token: "x" }, consume);
    await call(
      "/v1/jobs/{id}/checkpoint",
      "POST",
      path("checkpoint"),
      { token: "x", data: 1 },
      consume,
    );
    await call(
      "/v1/jobs/{id}/progress",
      "POST",
      path("progress"),
      { token: "x", progress: 1 },
      consume,
    );
    const leasedStale = await call(
      "/v1/queues/{queue}/leases",
      "POST",
      "/v1/queues/contract.stale/leases",
      {},
      consume,
    );
    if (leasedStale.body.jobs?.[0] !== undefined) {
      await call("/v1/jobs/{id}/run", "POST", path("run"));
    }
  }

  if (tokens !== null) {
    // Without a token, with a bad one, with too few scopes, and outside the token's queues.
    const none = {};
    const bad = { authorization: "Bearer not-a-valid-token-at-all" };
    const produce = auth(tokens.produce);
    for (const headers of [none, bad]) {
      await call(
        "/v1/queues/{queue}/jobs",
        "POST",
        `/v1/queues/${q}/jobs`,
        { payload: 1 },
        headers,
      );
      await call("/v1/queues/{queue}/leases", "POST", `/v1/queues/${q}/leases`, {}, headers);
      await call("/v1/jobs/{id}", "GET", "/v1/jobs/1", undefined, headers);
      await call("/v1/jobs/{id}", "DELETE", "/v1/jobs/1", undefined, headers);
      await call("/v1/jobs/{id}/ack", "POST", "/v1/jobs/1/ack", { token: "t" }, headers);
      await call("/v1/queues", "GET", "/v1/queues", undefined, headers);
      await call(
        "/v1/queues/{queue}/jobs",
        "GET",
        `/v1/queues/${q}/jobs?state=done`,
        undefined,
        headers,
      );
      await call("/v1/jobs/{id}/run", "POST", "/v1/jobs/1/run", undefined, headers);
      await call("/metrics", "GET", "/metrics", undefined, headers);
    }
    await call("/v1/queues/{queue}/leases", "POST", `/v1/queues/${q}/leases`, {}, produce);
    await call("/v1/queues/{queue}/pause", "POST", `/v1/queues/${q}/pause`, undefined, consume);
    await call("/v1/queues/{queue}/settings", "PUT", `/v1/queues/${q}/settings`, {}, consume);
    await call(
      "/v1/queues/{queue}/jobs",
      "GET",
      `/v1/queues/${q}/jobs?state=done`,
      undefined,
      produce,
    );
    await call("/v1/queues/{queue}/dead", "GET", `/v1/queues/${q}/dead`, undefined, consume);
    await call("/v1/queues/{queue}/leases", "POST", "/v1/queues/elsewhere/leases", {}, consume);
    await call("/v1/queues/{queue}", "GET", "/v1/queues/elsewhere", undefined, consume);
    await call("/metrics", "GET", "/metrics", undefined, consume);
    await call("/v1/jobs/{id}/run", "POST", "/v1/jobs/1/run", undefined, produce);
    // Flows: listing spans every queue (consume is limited to contract.*), a node outside the
    // token's queues, cancelling without admin.
    await call("/v1/flows", "GET", "/v1/flows", undefined, consume);
    await call("/v1/flows", "POST", "/v1/flows", {
      nodes: [{ ref: "a", queue: "elsewhere", payload: 1 }],
    }, consume);
    await call("/v1/flows", "POST", "/v1/flows", {
      nodes: [{ ref: "a", queue: "contract.flow", payload: 1 }],
    }, none);
    await call("/v1/flows/{id}", "DELETE", "/v1/flows/1", undefined, produce);
  }
  return result;
}
