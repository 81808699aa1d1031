import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { bearerToken, OPEN_ACCESS, type Principal, TokenSet } from "../../lib/auth/tokens.ts";

const SECRET = "s3cret-token-value-0123456789";
const OTHER = "another-token-value-abcdefghij";
const SECRET_SHA256 = createHash("sha256").update(SECRET).digest("hex");

function tokens(entries: unknown): string {
  return JSON.stringify(entries);
}

function single(entry: Record<string, unknown>): TokenSet {
  return TokenSet.parse(tokens([entry]));
}

function principal(entry: Record<string, unknown>): Principal {
  const principal = single({ name: "p", token: SECRET, ...entry }).authenticate(SECRET);
  assert.ok(principal);
  return principal;
}

/** Asserts parse() rejects `text` with a one-line message matching `pattern`, free of secrets. */
function assertRejects(text: string, pattern: RegExp, secrets: string[] = [SECRET, OTHER]): void {
  assert.throws(() => TokenSet.parse(text), (error: unknown) => {
    assert.ok(error instanceof Error);
    assert.match(error.message, /^Cannot load tokens file: /);
    assert.match(error.message, pattern);
    assert.ok(!error.message.includes("\n"), `multi-line message: ${error.message}`);
    for (const secret of secrets) {
      assert.ok(!error.message.includes(secret), `message leaks a token: ${error.message}`);
    }
    return true;
  });
}

Deno.test("TokenSet.authenticate() accepts a plain token entry", () => {
  const set = single({ name: "billing-workers", token: SECRET, scopes: ["produce"] });
  assert.equal(set.size, 1);
  assert.equal(set.authenticate(SECRET)?.name, "billing-workers");
});

Deno.test("TokenSet.authenticate() accepts a sha256 entry", () => {
  const set = single({ name: "ops", sha256: SECRET_SHA256, scopes: ["admin"] });
  assert.equal(set.authenticate(SECRET)?.name, "ops");
});

Deno.test("TokenSet.authenticate() returns null for a wrong token", () => {
  const set = TokenSet.parse(tokens([
    { name: "a", token: SECRET, scopes: ["produce"] },
    { name: "b", sha256: createHash("sha256").update(OTHER).digest("hex"), scopes: ["consume"] },
  ]));
  assert.equal(set.authenticate("not-the-right-token-at-all"), null);
  assert.equal(set.authenticate(""), null);
  assert.equal(set.authenticate(SECRET.slice(0, -1)), null);
  assert.equal(set.authenticate(SECRET + "x"), null);
  assert.equal(set.authenticate(SECRET_SHA256), null);
});

Deno.test("TokenSet.authenticate() picks the matching entry among many", () => {
  const set = TokenSet.parse(tokens([
    { name: "a", token: SECRET, scopes: ["produce"] },
    { name: "b", token: OTHER, scopes: ["consume"] },
  ]));
  assert.equal(set.size, 2);
  assert.equal(set.authenticate(SECRET)?.name, "a");
  assert.equal(set.authenticate(OTHER)?.name, "b");
});

Deno.test("TokenSet.parse() accepts a token of exactly 16 characters", () => {
  const set = single({ name: "p", token: "0123456789abcdef", scopes: ["produce"] });
  assert.equal(set.authenticate("0123456789abcdef")?.name, "p");
});

Deno.test("TokenSet.parse() rejects malformed files without echoing tokens", async (t) => {
  const cases: [string, string, RegExp][] = [
    ["invalid JSON", `[{"name": "a", "token": "${SECRET}"`, /not valid JSON/],
    ["invalid JSON quoting a token", `[{"token": ${SECRET}}]`, /not valid JSON/],
    ["a non-array", tokens({ name: "a", token: SECRET, scopes: ["produce"] }), /JSON array/],
    ["an empty array", "[]", /no entries/],
    ["a non-object entry", tokens([SECRET]), /^[^:]+: entry 1 is not an object$/],
    ["a null entry", tokens([null]), /entry 1 is not an object/],
    ["an array entry", tokens([[SECRET]]), /entry 1 is not an object/],
    ["a missing name", tokens([{ token: SECRET, scopes: ["produce"] }]), /entry 1 has no name/],
    [
      "a non-string name",
      tokens([{ name: 7, token: SECRET, scopes: ["produce"] }]),
      /entry 1 name must be a non-empty string/,
    ],
    [
      "an empty name",
      tokens([{ name: "", token: SECRET, scopes: ["produce"] }]),
      /entry 1 name must be a non-empty string/,
    ],
    [
      "a name with control characters",
      tokens([{ name: "a\nb", token: SECRET, scopes: ["produce"] }]),
      /entry 1 name contains control characters/,
    ],
    [
      "an unknown field",
      tokens([{ name: "a", token: SECRET, scopes: ["produce"], tokn: SECRET }]),
      /entry 1 \("a"\) has unknown field "tokn"/,
    ],
    [
      "both token and sha256",
      tokens([{ name: "a", token: SECRET, sha256: SECRET_SHA256, scopes: ["produce"] }]),
      /entry 1 \("a"\) has both token and sha256/,
    ],
    [
      "neither token nor sha256",
      tokens([{ name: "a", scopes: ["produce"] }]),
      /entry 1 \("a"\) has neither token nor sha256/,
    ],
    [
      "a non-string token",
      tokens([{ name: "a", token: 1234567890123456789, scopes: ["produce"] }]),
      /entry 1 \("a"\) token must be a string/,
    ],
    [
      "an empty token",
      tokens([{ name: "a", token: "", scopes: ["produce"] }]),
      /entry 1 \("a"\) token is empty/,
    ],
    [
      "a short token",
      tokens([{ name: "a", token: "short-secret", scopes: ["produce"] }]),
      /entry 1 \("a"\) token is shorter than 16 characters/,
    ],
    [
      "a token with surrounding whitespace",
      tokens([{ name: "a", token: ` ${SECRET}`, scopes: ["produce"] }]),
      /entry 1 \("a"\) token has leading or trailing whitespace/,
    ],
    [
      "a token with control characters",
      tokens([{ name: "a", token: `${SECRET}\u0000x`, scopes: ["produce"] }]),
      /entry 1 \("a"\) token contains control characters/,
    ],
    [
      "uppercase sha256",
      tokens([{ name: "a", sha256: SECRET_SHA256.toUpperCase(), scopes: ["produce"] }]),
      /entry 1 \("a"\) sha256 must be 64 lowercase hex characters/,
    ],
    [
      "short sha256",
      tokens([{ name: "a", sha256: SECRET_SHA256.slice(1), scopes: ["produce"] }]),
      /sha256 must be 64 lowercase hex characters/,
    ],
    [
      "non-hex sha256",
      tokens([{ name: "a", sha256: "g" + SECRET_SHA256.slice(1), scopes: ["produce"] }]),
      /sha256 must be 64 lowercase hex characters/,
    ],
    [
      "a non-string sha256",
      tokens([{ name: "a", sha256: 42, scopes: ["produce"] }]),
      /sha256 must be 64 lowercase hex characters/,
    ],
    [
      "missing scopes",
      tokens([{ name: "a", token: SECRET }]),
      /^[^:]+: entry 1 \("a"\) has no scopes$/,
    ],
    [
      "empty scopes",
      tokens([{ name: "a", token: SECRET, scopes: [] }]),
      /entry 1 \("a"\) has no scopes/,
    ],
    [
      "non-array scopes",
      tokens([{ name: "a", token: SECRET, scopes: "admin" }]),
      /entry 1 \("a"\) scopes must be an array/,
    ],
    [
      "a non-string scope",
      tokens([{ name: "a", token: SECRET, scopes: ["produce", 1] }]),
      /entry 1 \("a"\) scopes\[1\] must be a string/,
    ],
    [
      "an unknown scope",
      tokens([{ name: "a", token: SECRET, scopes: ["prodcue"] }]),
      /entry 1 \("a"\) has unknown scope "prodcue"/,
    ],
    [
      "a repeated scope",
      tokens([{ name: "a", token: SECRET, scopes: ["produce", "produce"] }]),
      /entry 1 \("a"\) lists scope "produce" twice/,
    ],
    [
      "non-array queues",
      tokens([{ name: "a", token: SECRET, scopes: ["produce"], queues: "billing.*" }]),
      /entry 1 \("a"\) queues must be an array/,
    ],
    [
      "empty queues",
      tokens([{ name: "a", token: SECRET, scopes: ["produce"], queues: [] }]),
      /entry 1 \("a"\) queues is empty/,
    ],
    [
      "a non-string queue glob",
      tokens([{ name: "a", token: SECRET, scopes: ["produce"], queues: ["x", 3] }]),
      /entry 1 \("a"\) queues\[1\] must be a non-empty string/,
    ],
    [
      "an empty queue glob",
      tokens([{ name: "a", token: SECRET, scopes: ["produce"], queues: [""] }]),
      /entry 1 \("a"\) queues\[0\] must be a non-empty string/,
    ],
    [
      "a duplicate name",
      tokens([
        { name: "a", token: SECRET, scopes: ["produce"] },
        { name: "a", token: OTHER, scopes: ["consume"] },
      ]),
      /entry 2 \("a"\) has the same name as entry 1/,
    ],
    [
      "a token listed twice, once as sha256",
      tokens([
        { name: "a", token: SECRET, scopes: ["produce"] },
        { name: "b", token: OTHER, scopes: ["produce"] },
        { name: "c", sha256: SECRET_SHA256, scopes: ["admin"] },
      ]),
      /entry 3 \("c"\) has the same token as entry 1/,
    ],
    [
      "a bad later entry",
      tokens([
        { name: "good", token: SECRET, scopes: ["produce"] },
        { name: "bad", token: OTHER, scopes: [] },
      ]),
      /entry 2 \("bad"\) has no scopes/,
    ],
  ];
  for (const [what, text, pattern] of cases) {
    await t.step(`rejects ${what}`, () => assertRejects(text, pattern));
  }
});

Deno.test("TokenSet.parse() never echoes a short token", () => {
  assertRejects(
    tokens([{ name: "a", token: "tiny-secret", scopes: ["produce"] }]),
    /shorter than 16/,
    ["tiny-secret"],
  );
});

Deno.test("TokenSet does not reveal digests when inspected", () => {
  const set = single({ name: "ops", sha256: SECRET_SHA256, scopes: ["admin"] });
  assert.ok(!Deno.inspect(set).includes(SECRET_SHA256));
  assert.ok(!JSON.stringify(set).includes(SECRET_SHA256));
});

Deno.test("Principal.allows() grants only the listed scopes", () => {
  const producer = principal({ scopes: ["produce"] });
  assert.equal(producer.allows("produce"), true);
  assert.equal(producer.allows("consume"), false);
  assert.equal(producer.allows("admin"), false);

  const worker = principal({ scopes: ["consume", "produce"] });
  assert.equal(worker.allows("produce"), true);
  assert.equal(worker.allows("consume"), true);
  assert.equal(worker.allows("admin"), false);
  assert.deepEqual([...worker.scopes].sort(), ["consume", "produce"]);
});

Deno.test("Principal.allows() treats admin as implying produce and consume", () => {
  const admin = principal({ scopes: ["admin"] });
  assert.equal(admin.allows("admin"), true);
  assert.equal(admin.allows("produce"), true);
  assert.equal(admin.allows("consume"), true);
  assert.deepEqual([...admin.scopes], ["admin"]);
});

Deno.test("Principal.allowsQueue() allows every queue when queues is absent", () => {
  const p = principal({ scopes: ["produce"] });
  for (const queue of ["billing", "billing.eu", "a", "x:y-z_1"]) {
    assert.equal(p.allowsQueue(queue), true, queue);
  }
});

Deno.test("Principal.allowsQueue() matches billing.* below billing but not billing itself", () => {
  const p = principal({ scopes: ["consume"], queues: ["billing.*"] });
  assert.equal(p.allowsQueue("billing.eu"), true);
  assert.equal(p.allowsQueue("billing.eu.x"), true);
  assert.equal(p.allowsQueue("billing."), true);
  assert.equal(p.allowsQueue("billing"), false);
  assert.equal(p.allowsQueue("billingXeu"), false);
  assert.equal(p.allowsQueue("xbilling.eu"), false);
  assert.equal(p.allowsQueue("emails"), false);
});

Deno.test("Principal.allowsQueue() lets a lone * match every queue", () => {
  const p = principal({ scopes: ["consume"], queues: ["*"] });
  for (const queue of ["billing", "billing.eu.x", "a", ""]) {
    assert.equal(p.allowsQueue(queue), true, queue);
  }
});

Deno.test("Principal.allowsQueue() anchors globs and supports * anywhere", () => {
  const p = principal({ scopes: ["consume"], queues: ["*.eu", "mail*box"] });
  assert.equal(p.allowsQueue("billing.eu"), true);
  assert.equal(p.allowsQueue("a.b.eu"), true);
  assert.equal(p.allowsQueue("billing.eu.x"), false);
  assert.equal(p.allowsQueue("mailbox"), true);
  assert.equal(p.allowsQueue("mail.out.box"), true);
  assert.equal(p.allowsQueue("mailbox2"), false);
});

Deno.test("Principal.allowsQueue() treats dots and regex metacharacters literally", () => {
  const p = principal({
    scopes: ["consume"],
    queues: ["billing.eu", "a+b", "(x|y)", "c?", "[d]", "e{2}", "^f$", "g\\h"],
  });
  assert.equal(p.allowsQueue("billing.eu"), true);
  assert.equal(p.allowsQueue("billingXeu"), false);
  assert.equal(p.allowsQueue("a+b"), true);
  assert.equal(p.allowsQueue("aab"), false);
  assert.equal(p.allowsQueue("ab"), false);
  assert.equal(p.allowsQueue("(x|y)"), true);
  assert.equal(p.allowsQueue("x"), false);
  assert.equal(p.allowsQueue("c?"), true);
  assert.equal(p.allowsQueue("c"), false);
  assert.equal(p.allowsQueue("[d]"), true);
  assert.equal(p.allowsQueue("d"), false);
  assert.equal(p.allowsQueue("e{2}"), true);
  assert.equal(p.allowsQueue("ee"), false);
  assert.equal(p.allowsQueue("^f$"), true);
  assert.equal(p.allowsQueue("f"), false);
  assert.equal(p.allowsQueue("g\\h"), true);
  assert.equal(p.allowsQueue("gh"), false);
});

Deno.test("bearerToken() extracts the token from a Bearer header", () => {
  assert.equal(bearerToken(`Bearer ${SECRET}`), SECRET);
  assert.equal(bearerToken(`bearer ${SECRET}`), SECRET);
  assert.equal(bearerToken(`BEARER ${SECRET}`), SECRET);
  assert.equal(bearerToken(`  Bearer \t ${SECRET}  `), SECRET);
});

Deno.test("bearerToken() returns null when absent, empty or another scheme", () => {
  assert.equal(bearerToken(null), null);
  assert.equal(bearerToken(""), null);
  assert.equal(bearerToken("Bearer"), null);
  assert.equal(bearerToken("Bearer   "), null);
  assert.equal(bearerToken(`Basic ${btoa("user:pass")}`), null);
  assert.equal(bearerToken(`Bearerx ${SECRET}`), null);
  assert.equal(bearerToken(SECRET), null);
});

Deno.test("OPEN_ACCESS is anonymous with every scope and every queue", () => {
  assert.equal(OPEN_ACCESS.name, "anonymous");
  assert.deepEqual([...OPEN_ACCESS.scopes].sort(), ["admin", "consume", "produce"]);
  for (const scope of ["produce", "consume", "admin"] as const) {
    assert.equal(OPEN_ACCESS.allows(scope), true, scope);
  }
  assert.equal(OPEN_ACCESS.allowsQueue("billing"), true);
  assert.equal(OPEN_ACCESS.allowsQueue("any.queue.at.all"), true);
});
