/**
 * Cross-site protection for a server without tokens, the way Jupyter, Vite and
 * webpack-dev-server protect local servers. Without tokens nothing proves who is calling, so a
 * web page the user visits could otherwise drive the API from the user's browser:
 *
 * - DNS rebinding: the page's own name is re-pointed at 127.0.0.1, so the browser calls tegami
 *   as same-origin. The `Host` header still carries the page's name, so only names that are
 *   this server's are accepted (judged on the request's authority: `Host`, or an absolute-form
 *   target's own, which wins over it): the listening address, `localhost` (and `*.localhost`), any IP
 *   address literal (a rebinding needs a name), and `--allowed-hosts`.
 * - Cross-origin writes: a form or a no-preflight `fetch` carries `Origin`. Every
 *   state-changing route (any method but GET, HEAD and OPTIONS) refuses a foreign one, as the
 *   WebSocket upgrade does.
 * - Bodies: a form or `text/plain` POST is refused with 415 even when empty, so a body-less
 *   admin call cannot ride on a form either (see `readJsonBody`'s `strictType`).
 *
 * With tokens, none of this applies: a page cannot attach the bearer token, and token holders
 * see the same behaviour as before.
 *
 * @module
 */

import { TegamiError } from "../core/errors.ts";
import { originAllowed } from "./origin.ts";
import type { HttpRequest } from "./http_request.ts";

/** What the cross-site check needs from the configuration. */
export interface CrossSiteRules {
  /** The interface the server listens on (`--host`). */
  listenHost: string;
  /** Extra host names allowed in `Host`, lower case. */
  allowedHosts: readonly string[];
  /** Origins allowed besides the same origin, or `*`. */
  allowedOrigins: readonly string[] | "*";
}

/** The host name of a `Host` header value, lower case, without port or IPv6 brackets. */
export function hostName(host: string): string {
  const value = host.trim().toLowerCase();
  if (value.startsWith("[")) {
    const end = value.indexOf("]");
    return end === -1 ? value : value.slice(1, end);
  }
  const colon = value.lastIndexOf(":");
  return colon === -1 ? value : value.slice(0, colon);
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function isIpLiteral(name: string): boolean {
  const v4 = IPV4.exec(name);
  if (v4 !== null) return v4.slice(1).every((part) => Number(part) <= 255);
  return name.includes(":") && /^[0-9a-f:.]+$/.test(name);
}

/** True when `Host` names this server (or is absent: no browser sends a request without it). */
export function hostAllowed(host: string | null, rules: CrossSiteRules): boolean {
  if (host === null) return true;
  const name = hostName(host);
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  if (isIpLiteral(name)) return true;
  if (name === hostName(rules.listenHost)) return true;
  return rules.allowedHosts.includes(name);
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Refuses a request that a foreign web page could have made: an authority that is not this
 * server's (DNS rebinding), or a state-changing method with a foreign `Origin`. `url` is the
 * request's URL, if already parsed.
 *
 * @throws {TegamiError} `forbidden`, naming the header and the flag that would allow it.
 */
export function checkCrossSite(request: HttpRequest, rules: CrossSiteRules, url?: URL): void {
  // The authority the request names: `Host` for an origin-form target, the target's own for an
  // absolute-form one (RFC 9112 §3.2.2), as the URL holds it after request_target.ts's rule.
  const host = (url ?? new URL(request.url)).host;
  // Clients send the same Host on every request: the last one allowed is not checked again.
  if (host === null || lastAllowed.get(rules) !== host) allowHost(host, rules);
  if (SAFE_METHODS.has(request.method)) return;
  if (!originAllowed(request.headers.get("origin"), host, rules.allowedOrigins)) {
    throw new TegamiError(
      "forbidden",
      "Cannot take the request: the Origin is neither this server nor listed in --allowed-origins",
    );
  }
}

/** The last `Host` each set of rules allowed. */
const lastAllowed = new WeakMap<CrossSiteRules, string>();

/** Refuses `host` unless it is this server's; remembers it as the last one allowed. */
function allowHost(host: string | null, rules: CrossSiteRules): void {
  if (!hostAllowed(host, rules)) {
    throw new TegamiError(
      "forbidden",
      `Cannot serve host "${hostName(host!).slice(0, 100)}": it is not this server's; ` +
        "add it to --allowed-hosts",
    );
  }
  if (host !== null) lastAllowed.set(rules, host);
}
