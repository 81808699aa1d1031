import assert from "node:assert/strict";
import { TegamiError } from "../../lib/core/errors.ts";
import { type Access, OPERATIONS, requireAccess } from "../../lib/auth/operations.ts";
import type { Principal, Scope } from "../../lib/auth/tokens.ts";

/** A principal holding exactly `scopes` (no scope implies another here). */
function principal(name: string, scopes: Scope[]): Principal {
  const held = new Set(scopes);
  return {
    name,
    scopes: held,
    allows: (scope) => held.has(scope),
    allowsQueue: () => true,
    limited: false,
  };
}

function refuses(who: Principal, access: Access, lacking: string): void {
  assert.throws(() => requireAccess(who, access), (error: unknown) => {
    assert.ok(error instanceof TegamiError);
    assert.equal(error.code, "forbidden");
    assert.equal(
      error.message,
      `Cannot do that with token "${who.name}": it lacks the ${lacking} scope`,
    );
    return true;
  });
}

Deno.test("requireAccess() lets anyone through to read and open operations", () => {
  const nobody = principal("nobody", []);
  requireAccess(nobody, "read");
  requireAccess(nobody, "open");
});

Deno.test("requireAccess() lets a job operation through with produce or consume", () => {
  requireAccess(principal("p", ["produce"]), "job");
  requireAccess(principal("c", ["consume"]), "job");
  refuses(principal("a", ["admin"]), "job", "produce or consume");
  refuses(principal("nobody", []), "job", "produce or consume");
});

Deno.test("requireAccess() wants a scope operation's own scope", () => {
  requireAccess(principal("p", ["produce"]), "produce");
  requireAccess(principal("c", ["consume"]), "consume");
  requireAccess(principal("a", ["admin"]), "admin");
  refuses(principal("p", ["produce"]), "consume", "consume");
  refuses(principal("c", ["consume", "produce"]), "admin", "admin");
});

Deno.test("requireAccess() wants both scopes for consume and produce, the consume scope first", () => {
  requireAccess(principal("both", ["consume", "produce"]), "consume and produce");
  refuses(principal("p", ["produce"]), "consume and produce", "consume");
  refuses(principal("c", ["consume"]), "consume and produce", "produce");
});

Deno.test("OPERATIONS gives every operation one of the kinds of access", () => {
  const kinds = new Set<string>([
    "produce",
    "consume",
    "admin",
    "read",
    "job",
    "consume and produce",
    "open",
  ]);
  for (const [operation, access] of Object.entries(OPERATIONS)) {
    assert.ok(kinds.has(access), `${operation}: ${access}`);
  }
  // What a consumer does with a lease needs what taking it needs.
  assert.equal(OPERATIONS.settle, OPERATIONS.lease);
  // Adding a flow's nodes with a lease is a settle and an enqueue at once.
  assert.equal(OPERATIONS.addFlowNodes, `${OPERATIONS.settle} and ${OPERATIONS.enqueue}`);
});
