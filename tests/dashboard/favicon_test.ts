/**
 * The dashboard's icon: a file the page links to, served under the page's CSP, so a browser
 * asks for no `/favicon.ico` and logs no 404.
 */

import assert from "node:assert/strict";
import { DASHBOARD_ASSETS } from "../../lib/dashboard/assets.ts";
import { startTestServer } from "../helpers/test_server.ts";

Deno.test("GET /favicon.svg serves the icon the page links to, under the page's CSP", async () => {
  await using server = await startTestServer();
  const page = await server.request("GET", "/");
  assert.match(page.body, /<link rel="icon" href="\/favicon.svg" type="image\/svg\+xml">/);
  const icon = await server.request("GET", "/favicon.svg");
  assert.equal(icon.status, 200);
  assert.equal(icon.headers.get("content-type"), "image/svg+xml");
  assert.equal(icon.headers.get("content-security-policy"), "default-src 'self'");
  assert.equal(icon.headers.get("x-content-type-options"), "nosniff");
  assert.match(icon.body, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  // Nothing in it runs or loads: no script, no event handler, no outside reference.
  assert.doesNotMatch(icon.body, /<script|\son[a-z]+=|href=|url\(/i);
  const head = await server.request("HEAD", "/favicon.svg");
  assert.equal(head.status, 200);
});

Deno.test("DASHBOARD_ASSETS lists the icon once, as SVG", () => {
  const icons = DASHBOARD_ASSETS.filter((asset) => asset.path === "/favicon.svg");
  assert.equal(icons.length, 1);
  assert.equal(icons[0].contentType, "image/svg+xml");
});
