/**
 * The cross-site rules of a server without tokens (lib/http/cross_site.ts), called directly with
 * `Request`s: which `Host` names are this server's, and which methods a foreign `Origin` may use.
 * tests/http/cross_site_test.ts drives the same rules through a running server.
 */

import assert from "node:assert/strict";
import { TegamiError } from "../../lib/core/errors.ts";
import {
  checkCrossSite,
  type CrossSiteRules,
  hostAllowed,
  hostName,
} from "../../lib/http/cross_site.ts";

const rules: CrossSiteRules = {
  listenHost: "MyHost.lan",
  allowedHosts: ["queue.internal"],
  allowedOrigins: ["https://app.example"],
};

/** A request as a browser would send it to `url`, with an Origin when given. */
function request(method: string, url: string, origin?: string): Request {
  return new Request(url, { method, headers: origin === undefined ? {} : { origin } });
}

function forbidden(fn: () => void, message: RegExp): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof TegamiError);
    assert.equal(error.code, "forbidden");
    assert.match(error.message, message);
    return true;
  });
}

Deno.test("hostName() answers the host name lower case, without port or IPv6 brackets", () => {
  assert.equal(hostName("Example.COM:8080"), "example.com");
  assert.equal(hostName("example.com"), "example.com");
  assert.equal(hostName(" localhost:1 "), "localhost");
  assert.equal(hostName("[::1]:8080"), "::1");
  assert.equal(hostName("[::1]"), "::1");
  assert.equal(hostName("[::1"), "[::1", "an unclosed bracket is left as it is");
});

Deno.test("hostAllowed() takes localhost, IP literals, the listening name and --allowed-hosts", () => {
  const allowed = [
    null,
    "localhost:8080",
    "app.localhost",
    "127.0.0.1:8080",
    "10.1.2.3",
    "[::1]:8080",
    "[2001:db8::1]",
    "myhost.lan:7777",
    "QUEUE.internal",
  ];
  for (const host of allowed) assert.equal(hostAllowed(host, rules), true, String(host));
});

Deno.test("hostAllowed() refuses any other name, as a DNS rebinding would bring", () => {
  const refused = [
    "evil.example",
    "localhost.evil.example",
    "256.1.1.1",
    "1.2.3.4.5",
    "myhost.lan.evil.example",
    "",
  ];
  for (const host of refused) assert.equal(hostAllowed(host, rules), false, host);
});

Deno.test("checkCrossSite() refuses a foreign host for any method, naming it and the flag", () => {
  for (const method of ["GET", "POST"]) {
    forbidden(
      () => checkCrossSite(request(method, "http://evil.example:8080/v1/queues"), rules),
      /^Cannot serve host "evil\.example": it is not this server's; add it to --allowed-hosts$/,
    );
  }
  const long = `${"a".repeat(300)}.example`;
  forbidden(
    () => checkCrossSite(request("GET", `http://${long}/`), rules),
    new RegExp(`^Cannot serve host "${"a".repeat(100)}": `),
  );
});

Deno.test("checkCrossSite() judges the URL's authority, which an absolute-form target sets", () => {
  // The Host header says one thing, the target another: the target's authority wins.
  const absolute = new Request("http://127.0.0.1:8080/v1/queues", {
    headers: { host: "evil.example" },
  });
  checkCrossSite(absolute, rules);
  const url = new URL("http://evil.example/v1/queues");
  forbidden(() => checkCrossSite(request("GET", "http://localhost/"), rules, url), /evil/);
});

Deno.test("checkCrossSite() refuses a foreign Origin on a state-changing method only", () => {
  const url = "http://localhost:8080/v1/queues/q/jobs";
  for (const method of ["GET", "HEAD", "OPTIONS"]) {
    checkCrossSite(request(method, url, "https://evil.example"), rules);
  }
  for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
    forbidden(
      () => checkCrossSite(request(method, url, "https://evil.example"), rules),
      /^Cannot take the request: the Origin is neither this server nor listed in --allowed-origins$/,
    );
    checkCrossSite(request(method, url, "http://localhost:8080"), rules);
    checkCrossSite(request(method, url, "https://app.example"), rules);
    checkCrossSite(request(method, url), rules);
  }
});

Deno.test("checkCrossSite() checks the host again after another one was refused", () => {
  const ok = request("POST", "http://localhost:8080/");
  checkCrossSite(ok, rules);
  forbidden(() => checkCrossSite(request("POST", "http://evil.example/"), rules), /evil/);
  checkCrossSite(ok, rules);
  forbidden(() => checkCrossSite(request("GET", "http://evil.example/"), rules), /evil/);
});
