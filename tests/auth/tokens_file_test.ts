/** tokensFileWarning(): a tokens file others can read, holding plain tokens, is named. */

import assert from "node:assert/strict";
import { tokensFileWarning } from "../../lib/auth/tokens_file.ts";
import { startServer } from "../../lib/server.ts";
import { resolveServeConfig } from "../../lib/config/serve_config.ts";
import type { Logger } from "../../lib/observe/log.ts";

const PLAIN = JSON.stringify([{ name: "w", token: "plain-token-0123456789", scopes: ["consume"] }]);
const HASHED = JSON.stringify([{ name: "w", sha256: "a".repeat(64), scopes: ["consume"] }]);

async function file(text: string, mode: number): Promise<string> {
  const path = await Deno.makeTempFile({ prefix: "tegami-tokens-" });
  await Deno.writeTextFile(path, text);
  await Deno.chmod(path, mode);
  return path;
}

Deno.test("tokensFileWarning() names a group- or world-readable file of plain tokens and the fix", async () => {
  for (const mode of [0o644, 0o640, 0o604]) {
    const path = await file(PLAIN, mode);
    const warning = tokensFileWarning(path, PLAIN);
    assert.ok(warning !== null, mode.toString(8));
    assert.match(warning, /readable by others/);
    assert.match(warning, /chmod 600/);
    assert.match(warning, /sha256/);
    await Deno.remove(path);
  }
});

Deno.test("tokensFileWarning() says nothing for an owner-only file or one of sha256 digests", async () => {
  const owner = await file(PLAIN, 0o600);
  assert.equal(tokensFileWarning(owner, PLAIN), null);
  const hashed = await file(HASHED, 0o644);
  assert.equal(tokensFileWarning(hashed, HASHED), null);
  await Deno.remove(owner);
  await Deno.remove(hashed);
});

Deno.test("startServer() logs the warning at warn level and still starts", async () => {
  const path = await file(PLAIN, 0o644);
  const dir = await Deno.makeTempDir({ prefix: "tegami-tokens-" });
  const warnings: string[] = [];
  const log: Logger = {
    log: () => {},
    debug: () => {},
    info: () => {},
    warn: (message) => warnings.push(message),
    error: () => {},
  };
  const server = await startServer({
    config: { ...resolveServeConfig([], {}), db: `${dir}/t.db`, port: 0, tokensFile: path },
    log,
  });
  await server.close();
  assert.equal(warnings.filter((w) => /Tokens file .* readable by others/.test(w)).length, 1);
  await Deno.remove(path);
  await Deno.remove(dir, { recursive: true });
});
