/**
 * TLS (`--tls-cert`, `--tls-key`) with a self-signed certificate made at test time by openssl:
 * HTTPS enqueue and lease, a WSS consumer (a child process trusting the certificate with
 * `--cert`, since `WebSocket` takes no CA option), and refusals: plain HTTP and WS to the TLS
 * port fail, and a client that does not trust the certificate fails the handshake. Skipped with
 * a printed reason when openssl is missing.
 */

import assert from "node:assert/strict";
import { runProgram, spawnServer } from "../helpers/process_server.ts";
import { startTestServer } from "../helpers/test_server.ts";

/** A self-signed certificate for 127.0.0.1 and localhost, in a temp dir. */
interface Certificate extends AsyncDisposable {
  dir: string;
  certFile: string;
  keyFile: string;
  certPem: string;
}

async function hasOpenssl(): Promise<boolean> {
  try {
    const out = await new Deno.Command("openssl", {
      args: ["version"],
      stdout: "null",
      stderr: "null",
    })
      .output();
    return out.success;
  } catch {
    return false;
  }
}

const OPENSSL = await hasOpenssl();
if (!OPENSSL) {
  console.log("tls_test.ts: skipped, openssl is not installed (apt-get install openssl)");
}

async function selfSigned(): Promise<Certificate> {
  const dir = await Deno.makeTempDir({ prefix: "tegami-tls-" });
  const certFile = `${dir}/cert.pem`;
  const keyFile = `${dir}/key.pem`;
  const out = await new Deno.Command("openssl", {
    args: [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      certFile,
      "-days",
      "2",
      "-subj",
      "/CN=tegami test",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "-addext",
      // A leaf, not a CA: rustls refuses a CA certificate as the server's own.
      "basicConstraints=critical,CA:FALSE",
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return {
    dir,
    certFile,
    keyFile,
    certPem: await Deno.readTextFile(certFile),
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

/** A consumer in a child process that trusts `certFile`: subscribes, takes one job, acks it. */
const CONSUMER = `
const [url, queue] = Deno.args;
const ws = new WebSocket(url);
const done = new Promise((resolve, reject) => {
  ws.onerror = (e) => reject(new Error("socket error: " + (e.message ?? e.type)));
  ws.onopen = () => ws.send(JSON.stringify({ op: "subscribe", ref: 1, queue, prefetch: 1 }));
  ws.onmessage = (event) => {
    const frame = JSON.parse(event.data);
    if (frame.ref === 1) console.log("subscribed");
    if (frame.op === "job") {
      ws.send(JSON.stringify({ op: "ack", ref: 2, id: frame.id, token: frame.lease.token, result: "via wss" }));
    }
    if (frame.ref === 2) {
      console.log("acked " + frame.id + " " + frame.state);
      ws.close();
      resolve();
    }
  };
});
await done;
`;

async function runConsumer(
  dir: string,
  args: string[],
  url: string,
  queue: string,
): Promise<Deno.ChildProcess> {
  const script = `${dir}/consumer.ts`;
  await Deno.writeTextFile(script, CONSUMER);
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-config", "--allow-net", ...args, script, url, queue],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** Reads a child's stdout until `text` appears; fails after `timeoutMs`. */
async function untilOutput(child: Deno.ChildProcess, text: string, timeoutMs = 10_000) {
  const reader = child.stdout.getReader();
  let out = "";
  const deadline = Date.now() + timeoutMs;
  try {
    while (!out.includes(text)) {
      if (Date.now() > deadline) throw new Error(`No "${text}" from the child; got: ${out}`);
      const { done, value } = await reader.read();
      if (done) break;
      out += new TextDecoder().decode(value);
    }
  } finally {
    reader.releaseLock();
  }
  return out;
}

Deno.test({
  name: "HTTPS enqueue and lease, and a WSS consumer, work with --tls-cert and --tls-key",
  ignore: !OPENSSL,
  fn: async () => {
    await using cert = await selfSigned();
    await using server = await startTestServer({
      realTime: true,
      config: { tlsCert: cert.certFile, tlsKey: cert.keyFile },
    });
    assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    using client = Deno.createHttpClient({ caCerts: [cert.certPem] });
    const post = async (path: string, body: unknown) => {
      const response = await fetch(server.url + path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        client,
      });
      return { status: response.status, body: await response.json() };
    };
    // HTTPS: enqueue, lease, ack.
    const enq = await post("/v1/queues/tls/jobs", { payload: { over: "https" } });
    assert.equal(enq.status, 201);
    const leased = await post("/v1/queues/tls/leases", {});
    assert.deepEqual(leased.body.jobs[0].payload, { over: "https" });
    const ack = await post(`/v1/jobs/${enq.body.id}/ack`, {
      token: leased.body.jobs[0].lease.token,
    });
    assert.deepEqual(ack, { status: 200, body: { id: enq.body.id, state: "done" } });

    // WSS: a consumer that trusts the certificate subscribes, gets a job pushed, acks it.
    const wss = server.url.replace(/^https/, "wss") + "/v1/ws";
    const consumer = await runConsumer(cert.dir, [`--cert=${cert.certFile}`], wss, "tls.ws");
    await untilOutput(consumer, "subscribed");
    const pushed = await post("/v1/queues/tls.ws/jobs", { payload: "pushed" });
    assert.match(await untilOutput(consumer, "acked"), new RegExp(`acked ${pushed.body.id} done`));
    const status = await consumer.status;
    await consumer.stderr.cancel();
    assert.equal(status.code, 0);
    const job = await fetch(`${server.url}/v1/jobs/${pushed.body.id}`, { client });
    assert.equal((await job.json()).result, "via wss");
  },
});

Deno.test({
  name: "the TLS port refuses plain HTTP, plain WS, and clients that do not trust the certificate",
  ignore: !OPENSSL,
  fn: async () => {
    await using cert = await selfSigned();
    await using server = await startTestServer({
      realTime: true,
      config: { tlsCert: cert.certFile, tlsKey: cert.keyFile },
    });
    const port = new URL(server.url).port;
    // Plain HTTP: no HTTP answer comes back.
    await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`));
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
    await conn.write(new TextEncoder().encode("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    const buffer = new Uint8Array(1024);
    const n = await conn.read(buffer).catch(() => null);
    conn.close();
    const answer = n === null ? "" : new TextDecoder().decode(buffer.subarray(0, n));
    assert.doesNotMatch(answer, /^HTTP\//, "plain HTTP got an HTTP answer");
    // HTTPS without trusting the certificate: the handshake fails.
    await assert.rejects(
      fetch(`${server.url}/healthz`),
      (error: Error) => /invalid peer certificate/i.test(String(error.cause)),
    );
    // Plain WS, and WSS from a client that does not trust the certificate.
    const plain = await runConsumer(cert.dir, [], `ws://127.0.0.1:${port}/v1/ws`, "q");
    const plainStatus = await plain.status;
    await plain.stdout.cancel();
    await plain.stderr.cancel();
    assert.notEqual(plainStatus.code, 0, "a plain ws:// client connected to the TLS port");
    const untrusted = await runConsumer(
      cert.dir,
      [],
      server.url.replace(/^https/, "wss") + "/v1/ws",
      "q",
    );
    const untrustedStatus = await untrusted.status;
    await untrusted.stdout.cancel();
    const stderr = await new Response(untrusted.stderr).text();
    assert.notEqual(untrustedStatus.code, 0, "an untrusting wss:// client connected");
    assert.match(stderr, /socket error|certificate|UnknownIssuer/i);
    // The server is unharmed.
    using client = Deno.createHttpClient({ caCerts: [cert.certPem] });
    const health = await fetch(`${server.url}/healthz`, { client });
    assert.deepEqual(await health.json(), { status: "ok" });
  },
});

Deno.test({
  name:
    "tegami serve --tls-cert --tls-key serves HTTPS; unreadable or bad files exit 1, a certificate without a key 2",
  ignore: !OPENSSL,
  fn: async () => {
    await using cert = await selfSigned();
    {
      await using server = await spawnServer([
        "--db",
        `${cert.dir}/t.db`,
        "--tls-cert",
        cert.certFile,
        "--tls-key",
        cert.keyFile,
      ]);
      assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      using client = Deno.createHttpClient({ caCerts: [cert.certPem] });
      const health = await fetch(`${server.url}/readyz`, { client });
      assert.deepEqual(await health.json(), { status: "ready" });
    }
    await Deno.writeTextFile(`${cert.dir}/junk.pem`, "not a certificate\n");
    const otherKey = await new Deno.Command("openssl", {
      args: [
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-out",
        `${cert.dir}/other.pem`,
      ],
      stdout: "null",
      stderr: "null",
    }).output();
    assert.ok(otherKey.success);
    const bad: [string, string[]][] = [
      ["a missing certificate", ["--tls-cert", `${cert.dir}/none.pem`, "--tls-key", cert.keyFile]],
      ["a junk certificate", ["--tls-cert", `${cert.dir}/junk.pem`, "--tls-key", cert.keyFile]],
      ["a junk key", ["--tls-cert", cert.certFile, "--tls-key", `${cert.dir}/junk.pem`]],
      ["the key for the certificate", ["--tls-cert", cert.keyFile, "--tls-key", cert.certFile]],
      ["a key of another pair", [
        "--tls-cert",
        cert.certFile,
        "--tls-key",
        `${cert.dir}/other.pem`,
      ]],
      ["a certificate without a key", ["--tls-cert", cert.certFile]],
    ];
    for (const [what, args] of bad) {
      const run = await runProgram(["serve", "--port", "0", "--db", `${cert.dir}/b.db`, ...args]);
      // A flag missing is a mistake on the command line (2); files that do not load, 1.
      const code = what === "a certificate without a key" ? 2 : 1;
      assert.equal(run.code, code, `${what}: ${run.stderr}`);
      assert.equal(run.stderr.trim().split("\n").length, 1, `${what}: ${run.stderr}`);
      assert.match(run.stderr, /^tegami: /, what);
    }
  },
});
