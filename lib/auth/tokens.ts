/**
 * Bearer-token authentication: the `--tokens` file, principals, scopes and queue globs.
 *
 * The tokens file is a JSON array of entries:
 *
 * ```json
 * [{ "name": "billing-workers", "token": "…", "scopes": ["consume"], "queues": ["billing.*"] },
 *  { "name": "ops", "sha256": "<64 lowercase hex>", "scopes": ["admin"] }]
 * ```
 *
 * Each entry has exactly one of `token` (the secret itself, at least 16 characters) or `sha256`
 * (the lowercase hex digest of the secret). Every bearer check compares digest against digest.
 * A plain token is also kept in memory (never shown), because an AWS Signature Version 4 is an
 * HMAC keyed by the secret itself: the SQS API checks one with the entry's name as the access
 * key id and its token as the secret access key. A `sha256` entry cannot sign SQS requests.
 * `queues` is a list of globs where `*` matches any characters (dots included) and everything
 * else is literal; absent means every queue.
 *
 * Load errors name the entry (numbered from 1) and its name, never a token value.
 *
 * @module
 */

import { createHash, timingSafeEqual } from "node:crypto";
import { TegamiError } from "../core/errors.ts";

/** What a token may do: `admin` implies `produce` and `consume`. */
export type Scope = "produce" | "consume" | "admin";

/** Who a request acts as, and what it may touch. */
export interface Principal {
  /** The entry's name from the tokens file, or "anonymous" when auth is off. */
  readonly name: string;
  /** The scopes the entry lists (not expanded: see {@linkcode Principal.allows}). */
  readonly scopes: ReadonlySet<Scope>;
  /** Whether this principal holds `scope`; `admin` implies `produce` and `consume`. */
  allows(scope: Scope): boolean;
  /** Whether this principal may use `queue` according to its queue globs. */
  allowsQueue(queue: string): boolean;
  /** True when its queue globs leave some queues out: then what spans all queues is closed to it. */
  readonly limited: boolean;
}

const SCOPES: readonly Scope[] = ["produce", "consume", "admin"];
const FIELDS: ReadonlySet<string> = new Set(["name", "token", "sha256", "scopes", "queues"]);
const MIN_TOKEN_LENGTH = 16;
const SHA256_HEX = /^[0-9a-f]{64}$/;
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Compiles a queue glob to an anchored RegExp: `*` becomes `.*`, everything else is literal. */
function compileGlob(glob: string): RegExp {
  const literal = glob.split("*").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  // The `s` flag lets `.*` cross any character; queue names cannot hold newlines anyway.
  return new RegExp(`^${literal.join(".*")}$`, "s");
}

class TokenPrincipal implements Principal {
  readonly name: string;
  readonly scopes: ReadonlySet<Scope>;
  readonly #queues: readonly RegExp[] | null;
  readonly limited: boolean;

  constructor(
    name: string,
    scopes: ReadonlySet<Scope>,
    queues: readonly RegExp[] | null,
    limited: boolean,
  ) {
    this.name = name;
    this.scopes = scopes;
    this.#queues = queues;
    this.limited = limited;
  }

  allows(scope: Scope): boolean {
    return this.scopes.has(scope) || this.scopes.has("admin");
  }

  allowsQueue(queue: string): boolean {
    return this.#queues === null || this.#queues.some((pattern) => pattern.test(queue));
  }
}

/** The principal used when auth is off: "anonymous", every scope, every queue. */
export const OPEN_ACCESS: Principal = Object.freeze(
  new TokenPrincipal("anonymous", new Set(SCOPES), null, false),
);

interface Entry {
  readonly digest: Uint8Array;
  readonly principal: Principal;
  /** The token itself for an entry given as `token` (signatures need it); null for `sha256`. */
  readonly secret: string | null;
}

/** An entry as a request signature needs it: who it is, and its secret if the server has it. */
export interface SigningEntry {
  /** The entry's principal. */
  readonly principal: Principal;
  /** The token, or null for an entry given only as a `sha256` digest. */
  readonly secret: string | null;
}

function sha256(text: string): Uint8Array {
  return createHash("sha256").update(text, "utf8").digest();
}

function fail(detail: string): never {
  throw new Error(`Cannot load tokens file: ${detail}`);
}

function parseEntry(raw: unknown, index: number): { name: string; entry: Entry } {
  let label = `entry ${index + 1}`;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    fail(`${label} is not an object`);
  }
  const fields = raw as Record<string, unknown>;

  // The name first, so every later message can name the entry.
  const name = fields.name;
  if (name === undefined) fail(`${label} has no name`);
  if (typeof name !== "string" || name === "") fail(`${label} name must be a non-empty string`);
  if (CONTROL.test(name)) fail(`${label} name contains control characters`);
  label += ` (${JSON.stringify(name)})`;

  // Only field names are echoed here, never values: a misspelt field may hold a secret.
  for (const key of Object.keys(fields)) {
    if (!FIELDS.has(key)) fail(`${label} has unknown field ${JSON.stringify(key)}`);
  }

  const { token, sha256: hex } = fields;
  let digest: Uint8Array;
  let secret: string | null = null;
  if (token !== undefined && hex !== undefined) {
    fail(`${label} has both token and sha256; give exactly one`);
  } else if (token !== undefined) {
    if (typeof token !== "string") fail(`${label} token must be a string`);
    if (token === "") fail(`${label} token is empty`);
    if (token.length < MIN_TOKEN_LENGTH) {
      fail(`${label} token is shorter than ${MIN_TOKEN_LENGTH} characters, too easy to guess`);
    }
    // bearerToken() trims, so such a token could never be presented intact.
    if (token.trim() !== token) fail(`${label} token has leading or trailing whitespace`);
    if (CONTROL.test(token)) fail(`${label} token contains control characters`);
    digest = sha256(token);
    secret = token;
  } else if (hex !== undefined) {
    if (typeof hex !== "string" || !SHA256_HEX.test(hex)) {
      fail(`${label} sha256 must be 64 lowercase hex characters`);
    }
    digest = Uint8Array.from(hex.match(/../g)!, (byte) => parseInt(byte, 16));
  } else {
    fail(`${label} has neither token nor sha256; give exactly one`);
  }

  const scopes = fields.scopes;
  if (scopes === undefined) fail(`${label} has no scopes`);
  if (!Array.isArray(scopes)) fail(`${label} scopes must be an array`);
  if (scopes.length === 0) fail(`${label} has no scopes`);
  const scopeSet = new Set<Scope>();
  for (const [i, scope] of scopes.entries()) {
    if (typeof scope !== "string") fail(`${label} scopes[${i}] must be a string`);
    if (!(SCOPES as readonly string[]).includes(scope)) {
      // Echo a typo ("consumer"), but nothing as long as a token: a token pasted into the
      // wrong field must not end up in the startup error (found by log_secrets_test.ts).
      const shown = scope.length < MIN_TOKEN_LENGTH ? ` ${JSON.stringify(scope)}` : "";
      fail(`${label} has unknown scope${shown} in scopes[${i}]; use ${SCOPES.join(", ")}`);
    }
    if (scopeSet.has(scope as Scope)) fail(`${label} lists scope "${scope}" twice`);
    scopeSet.add(scope as Scope);
  }

  let queues: RegExp[] | null = null;
  const globs = fields.queues;
  if (globs !== undefined) {
    if (!Array.isArray(globs)) fail(`${label} queues must be an array`);
    if (globs.length === 0) {
      fail(`${label} queues is empty; omit it to allow every queue`);
    }
    queues = globs.map((glob, i) => {
      if (typeof glob !== "string" || glob === "") {
        fail(`${label} queues[${i}] must be a non-empty string`);
      }
      return compileGlob(glob);
    });
  }

  // A glob of stars alone matches every queue, so a list holding one limits nothing.
  const limited = Array.isArray(globs) && !globs.some((glob) => /^\*+$/.test(glob));
  const principal = Object.freeze(new TokenPrincipal(name, scopeSet, queues, limited));
  return { name, entry: { digest, principal, secret } };
}

/** The tokens loaded from a `--tokens` file, checked in constant time. */
export class TokenSet {
  // Private, so inspecting a TokenSet shows no digests.
  readonly #entries: readonly Entry[];
  readonly #byName: ReadonlyMap<string, Entry>;

  private constructor(entries: readonly Entry[]) {
    this.#entries = entries;
    this.#byName = new Map(entries.map((entry) => [entry.principal.name, entry]));
  }

  /** Parses and validates a tokens file; throws an `Error` naming the first bad entry. */
  static parse(jsonText: string): TokenSet {
    let raw: unknown;
    try {
      raw = JSON.parse(jsonText);
    } catch (error) {
      // The parser's message quotes the source text, which may hold tokens: keep the position.
      const at = /position (\d+)/.exec(String(error))?.[1];
      fail(`not valid JSON${at === undefined ? "" : ` (at position ${at})`}`);
    }
    if (!Array.isArray(raw)) fail("expected a JSON array of entries");
    if (raw.length === 0) fail("no entries; every request would be refused");

    const entries: Entry[] = [];
    const seen = new Map<string, number>();
    for (const [index, item] of raw.entries()) {
      const { name, entry } = parseEntry(item, index);
      const label = `entry ${index + 1} (${JSON.stringify(name)})`;
      const earlier = seen.get(name);
      if (earlier !== undefined) fail(`${label} has the same name as entry ${earlier + 1}`);
      seen.set(name, index);
      // Load time is not secret, so an ordinary comparison is fine here.
      const twin = entries.findIndex((e) => sameBytes(e.digest, entry.digest));
      if (twin !== -1) fail(`${label} has the same token as entry ${twin + 1}`);
      entries.push(entry);
    }
    return new TokenSet(entries);
  }

  /** The principal whose token this is, or null; compares against every entry in constant time. */
  authenticate(token: string): Principal | null {
    const digest = sha256(token);
    let match: Principal | null = null;
    // Every entry is compared, with no early exit, so timing is the same for every presented
    // token: it reveals neither which entry matched nor whether any did. (The loop's length
    // follows the number of entries, but that is fixed for the life of the server.)
    for (const entry of this.#entries) {
      const equal = timingSafeEqual(digest, entry.digest);
      match = equal ? entry.principal : match;
    }
    return match;
  }

  /**
   * The entry named `name`, for checking a request signature whose access key id is that name;
   * null when there is none. Names are not secret, so this lookup need not be constant-time.
   */
  signingEntry(name: string): SigningEntry | null {
    const entry = this.#byName.get(name);
    return entry === undefined ? null : { principal: entry.principal, secret: entry.secret };
  }

  /** How many entries the file held. */
  get size(): number {
    return this.#entries.length;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** The token in an `Authorization: Bearer <token>` header, or null if absent or another scheme. */
export function bearerToken(header: string | null): string | null {
  if (header === null) return null;
  const match = /^\s*(\S+)\s+(.*)$/s.exec(header);
  if (match === null || match[1].toLowerCase() !== "bearer") return null;
  const token = match[2].trim();
  return token === "" ? null : token;
}

/** Throws `forbidden` unless `principal` holds `scope` (admin holds every scope). */
export function requireScope(principal: Principal, scope: Scope | "produce or consume"): void {
  const ok = scope === "produce or consume"
    ? principal.allows("produce") || principal.allows("consume")
    : principal.allows(scope);
  if (!ok) {
    throw new TegamiError(
      "forbidden",
      `Cannot do that with token "${principal.name}": it lacks the ${scope} scope`,
    );
  }
}

/** Throws `forbidden` unless `principal` may use `queue`. */
export function requireQueue(principal: Principal, queue: string): void {
  if (!principal.allowsQueue(queue)) {
    throw new TegamiError(
      "forbidden",
      `Cannot use queue "${queue}" with token "${principal.name}": not among its queues`,
    );
  }
}
