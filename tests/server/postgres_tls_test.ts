/**
 * TLS to the database end to end: a private PostgreSQL with `ssl=on` and a self-signed
 * certificate made by openssl, a `tegami serve` process with `--db postgres://…?sslmode=require`
 * that enqueues, leases and acks through it over encrypted connections (the server's own
 * `pg_stat_ssl` says so), and the same URL against a server without TLS refused in one line.
 * Needs PostgreSQL's server binaries and openssl; the shared PostgreSQL is not touched.
 */

import assert from "node:assert/strict";
import { connectPg } from "../../lib/store/postgres/pg_driver.ts";
import { freePort, startPrivatePg } from "../helpers/private_pg.ts";
import { runProgram, spawnServer } from "../helpers/process_server.ts";

/** Whether `command` runs here. */
function available(command: string): boolean {
  try {
    new Deno.Command(command, { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync();
    return true;
  } catch {
    return false;
  }
}

/** Whether PostgreSQL's server binaries are installed (Debian's layout, or on PATH). */
function postgresInstalled(): boolean {
  try {
    return [...Deno.readDirSync("/usr/lib/postgresql")].length > 0;
  } catch {
    return available("initdb");
  }
}

const missing = !available("openssl") || !postgresInstalled();

/** A self-signed certificate and its key for CN=127.0.0.1, as PEM texts. */
async function selfSigned(): Promise<{ cert: string; key: string }> {
  const dir = await Deno.makeTempDir({ prefix: "tegami-tls-" });
  try {
    const out = await new Deno.Command("openssl", {
      args: [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        `${dir}/server.key`,
        "-out",
        `${dir}/server.crt`,
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!out.success) throw new Error(`openssl failed: ${new TextDecoder().decode(out.stderr)}`);
    return {
      cert: await Deno.readTextFile(`${dir}/server.crt`),
      key: await Deno.readTextFile(`${dir}/server.key`),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? {} : JSON.parse(text) };
}

Deno.test({
  name: "tegami serve with sslmode=require enqueues, leases and acks over TLS",
  ignore: missing,
  fn: async () => {
    const { cert, key } = await selfSigned();
    await using pg = await startPrivatePg(freePort(), {
      files: { "server.crt": cert, "server.key": key },
      settings: {
        ssl: "on",
        ssl_cert_file: "{dir}/server.crt",
        ssl_key_file: "{dir}/server.key",
      },
    });
    const url = `${pg.url}?sslmode=require`;
    await using server = await spawnServer(["--db", url, "--pg-schema", "tls"]);
    const posted = await call(server.url, "POST", "/v1/queues/q/jobs", { payload: { n: 1 } });
    assert.equal(posted.status, 201, JSON.stringify(posted.body));
    const leased = await call(server.url, "POST", "/v1/queues/q/leases", { max: 1 });
    assert.equal(leased.status, 200);
    const [job] = leased.body.jobs as { id: number; payload: unknown; lease: { token: string } }[];
    assert.equal(job.id, posted.body.id);
    assert.deepEqual(job.payload, { n: 1 });
    const acked = await call(server.url, "POST", `/v1/jobs/${job.id}/ack`, {
      token: job.lease.token,
    });
    assert.equal(acked.status, 200, JSON.stringify(acked.body));
    const after = await call(server.url, "GET", `/v1/jobs/${job.id}`);
    assert.equal(after.body.state, "done");

    // Every connection the server holds is encrypted, as PostgreSQL itself reports.
    const sql = connectPg(pg.url, { schema: "public", max: 1 });
    try {
      const rows = await sql<{ ssl: boolean }[]>`
        select s.ssl from pg_stat_ssl s join pg_stat_activity a using (pid)
        where a.application_name = 'tegami' and a.pid <> pg_backend_pid()`;
      assert.ok(rows.length > 0, "the server holds connections");
      assert.ok(rows.every((r) => r.ssl), `unencrypted connections: ${JSON.stringify(rows)}`);
    } finally {
      await sql.end();
    }
    server.kill("SIGTERM");
    assert.equal((await server.exited()).code, 0);
  },
});

Deno.test({
  name: "sslmode=require against a server without TLS fails at startup with one clear line",
  ignore: missing,
  fn: async () => {
    await using pg = await startPrivatePg(freePort(), { settings: { ssl: "off" } });
    const { code, stderr } = await runProgram([
      "serve",
      "--port",
      "0",
      "--db",
      `${pg.url}?sslmode=require`,
    ]);
    assert.notEqual(code, 0);
    const lines = stderr.trim().split("\n");
    assert.equal(lines.length, 1, stderr);
    assert.match(
      lines[0],
      /^tegami: Cannot connect to PostgreSQL at 127\.0\.0\.1:\d+\/postgres: the server does not accept TLS connections, which sslmode=require demands/,
    );
  },
});
