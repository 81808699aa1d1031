/**
 * TLS to the database end to end: a private PostgreSQL with `ssl=on` and a self-signed
 * certificate made by openssl, a `tegami serve` process with `--db postgres://…?sslmode=require`
 * that enqueues, leases and acks through it over encrypted connections (the server's own
 * `pg_stat_ssl` says so), and the same URL against a server without TLS refused in one line.
 * With a private CA made by openssl: `verify-full` + `sslrootcert` trusting it, and refusing a
 * certificate the system does not trust or that names another host; `verify-ca` checking only
 * the chain. Needs PostgreSQL's server binaries and openssl; the shared PostgreSQL is not touched.
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

/** Runs openssl with `args`; throws with its stderr if it fails. */
async function openssl(...args: string[]): Promise<void> {
  const out = await new Deno.Command("openssl", { args, stdout: "null", stderr: "piped" })
    .output();
  if (!out.success) throw new Error(`openssl failed: ${new TextDecoder().decode(out.stderr)}`);
}

/** Writes a self-signed certificate `dir/NAME.crt` for `subject` and its key `dir/NAME.key`. */
function selfSignedInto(dir: string, name: string, subject: string): Promise<void> {
  return openssl(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "1",
    "-subj",
    subject,
    "-keyout",
    `${dir}/${name}.key`,
    "-out",
    `${dir}/${name}.crt`,
  );
}

/** A self-signed certificate and its key for CN=127.0.0.1, as PEM texts. */
async function selfSigned(): Promise<{ cert: string; key: string }> {
  const dir = await Deno.makeTempDir({ prefix: "tegami-tls-" });
  try {
    await selfSignedInto(dir, "server", "/CN=127.0.0.1");
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

/** A private CA and a server certificate it signed for `altName` (`IP:…` or `DNS:…`), as PEM. */
async function signedByCa(altName: string): Promise<{ ca: string; cert: string; key: string }> {
  const dir = await Deno.makeTempDir({ prefix: "tegami-ca-" });
  try {
    await selfSignedInto(dir, "ca", "/CN=tegami test CA");
    await openssl(
      "req",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-subj",
      "/CN=database",
      "-keyout",
      `${dir}/server.key`,
      "-out",
      `${dir}/server.csr`,
    );
    await Deno.writeTextFile(`${dir}/ext.cnf`, `subjectAltName=${altName}\n`);
    await openssl(
      "x509",
      "-req",
      "-in",
      `${dir}/server.csr`,
      "-CA",
      `${dir}/ca.crt`,
      "-CAkey",
      `${dir}/ca.key`,
      "-CAcreateserial",
      "-days",
      "1",
      "-extfile",
      `${dir}/ext.cnf`,
      "-out",
      `${dir}/server.crt`,
    );
    return {
      ca: await Deno.readTextFile(`${dir}/ca.crt`),
      cert: await Deno.readTextFile(`${dir}/server.crt`),
      key: await Deno.readTextFile(`${dir}/server.key`),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A private PostgreSQL with TLS on, serving `cert` and `key`. */
function tlsPg(cert: string, key: string) {
  return startPrivatePg(freePort(), {
    files: { "server.crt": cert, "server.key": key },
    settings: { ssl: "on", ssl_cert_file: "{dir}/server.crt", ssl_key_file: "{dir}/server.key" },
  });
}

/** Writes `text` to a temp file; answers its path and a disposer. */
async function tempFile(text: string): Promise<{ path: string } & AsyncDisposable> {
  const path = await Deno.makeTempFile({ prefix: "tegami-ca-", suffix: ".crt" });
  await Deno.writeTextFile(path, text);
  return { path, [Symbol.asyncDispose]: () => Deno.remove(path) };
}

/** Runs `serve` on `url` expecting it to refuse; answers its one stderr line. */
async function refusedLine(url: string): Promise<string> {
  const { code, stderr } = await runProgram(["serve", "--port", "0", "--db", url]);
  assert.equal(code, 1, stderr);
  const lines = stderr.trim().split("\n");
  assert.equal(lines.length, 1, stderr);
  return lines[0];
}

Deno.test({
  name: "sslmode=verify-full with sslrootcert trusts that CA and checks the server's name",
  ignore: missing,
  fn: async () => {
    const right = await signedByCa("IP:127.0.0.1");
    await using ca = await tempFile(right.ca);
    await using pg = await tlsPg(right.cert, right.key);
    const url = `${pg.url}?sslmode=verify-full&sslrootcert=${encodeURIComponent(ca.path)}`;
    await using server = await spawnServer(["--db", url, "--pg-schema", "verified"]);
    const posted = await call(server.url, "POST", "/v1/queues/q/jobs", { payload: 1 });
    assert.equal(posted.status, 201, JSON.stringify(posted.body));
    assert.equal((await call(server.url, "GET", `/v1/jobs/${posted.body.id}`)).status, 200);
    server.kill("SIGTERM");
    assert.equal((await server.exited()).code, 0);

    // The same certificate is not trusted by the system's CAs: verify-full alone refuses it.
    assert.match(
      await refusedLine(`${pg.url}?sslmode=verify-full`),
      /^tegami: Cannot connect to PostgreSQL at 127\.0\.0\.1:\d+\/postgres: .*(certificate|CERT)/i,
    );
    // sslrootcert with a mode that checks nothing is a mistake in the flags: exit 2, before
    // connecting.
    const mistake = await runProgram([
      "serve",
      "--port",
      "0",
      "--db",
      `${pg.url}?sslmode=require&sslrootcert=${encodeURIComponent(ca.path)}`,
    ]);
    assert.equal(mistake.code, 2, mistake.stderr);
    assert.match(
      mistake.stderr,
      /^tegami: Invalid --db \(TEGAMI_DB\): sslrootcert needs sslmode=verify-full or sslmode=verify-ca \(sslmode=require checks no certificate\)\n$/,
    );
    assert.match(
      await refusedLine(`${pg.url}?sslmode=verify-full&sslrootcert=/nonexistent/ca.crt`),
      /^tegami: Cannot read sslrootcert \/nonexistent\/ca\.crt: /,
    );
  },
});

Deno.test({
  name: "verify-full refuses a certificate naming another host; verify-ca accepts it",
  ignore: missing,
  fn: async () => {
    const wrong = await signedByCa("DNS:db.elsewhere.example");
    await using ca = await tempFile(wrong.ca);
    await using pg = await tlsPg(wrong.cert, wrong.key);
    const root = `sslrootcert=${encodeURIComponent(ca.path)}`;
    assert.match(
      await refusedLine(`${pg.url}?sslmode=verify-full&${root}`),
      /^tegami: Cannot connect to PostgreSQL at 127\.0\.0\.1:\d+\/postgres: .*127\.0\.0\.1/,
    );
    await using server = await spawnServer([
      "--db",
      `${pg.url}?sslmode=verify-ca&${root}`,
      "--pg-schema",
      "chain_only",
    ]);
    const posted = await call(server.url, "POST", "/v1/queues/q/jobs", { payload: 1 });
    assert.equal(posted.status, 201, JSON.stringify(posted.body));
    server.kill("SIGTERM");
    assert.equal((await server.exited()).code, 0);
  },
});
