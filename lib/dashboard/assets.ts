/**
 * The dashboard's files, embedded at build time (`with { type: "text" }`, which `deno compile`
 * bundles into the binary), so the server never reads the source tree. The page is a client of
 * the public API like any other; it needs no CDN, font or library, and runs under a CSP that
 * allows scripts and styles from this server only (no `'unsafe-inline'`).
 *
 * To add a file: put it in this folder, import it here and list it in
 * {@linkcode DASHBOARD_ASSETS}; the HTTP API serves every entry at its path.
 *
 * @module
 */

import css from "./dashboard.css" with { type: "text" };
import script from "./dashboard.js" with { type: "text" };
import html from "./index.html" with { type: "text" };
import icon from "./favicon.svg" with { type: "text" };

/** One file of the dashboard, as served. */
export interface Asset {
  /** The URL path it is served at, e.g. `/dashboard.js`. */
  readonly path: string;
  /** Its `content-type`. */
  readonly contentType: string;
  /** Its text. */
  readonly body: string;
}

/** Every file of the dashboard; the page itself is served at `/`. */
export const DASHBOARD_ASSETS: readonly Asset[] = [
  { path: "/", contentType: "text/html; charset=utf-8", body: html },
  { path: "/dashboard.js", contentType: "text/javascript; charset=utf-8", body: script },
  { path: "/dashboard.css", contentType: "text/css; charset=utf-8", body: css },
  // An SVG file, not an inline data: URL, which the page's CSP would refuse.
  { path: "/favicon.svg", contentType: "image/svg+xml", body: icon },
];
