/**
 * The request target and its authority: the one rule every path a request takes applies before
 * anything is routed (the front door's own parser, the relay to the private `Deno.serve`, and
 * `--front-door off`).
 *
 * - `Host` is required (RFC 9112 §3.2, RFC 9110 §7.2), except on HTTP/2, whose `:authority`
 *   takes its place, and must be one valid `uri-host [":" port]` (RFC 3986 §3.2.2–3.2.3):
 *   anything else — a path, a query, a fragment, userinfo, an empty value, two values — is 400.
 * - An origin-form target (`/path?query`) is routed by its own path; `Host` names the authority.
 * - An absolute-form target (`http://authority/path`) is routed by its path and its own
 *   authority wins: `Host` is ignored (RFC 9112 §3.2.2), so the host rule and the Origin rule
 *   judge the target's authority. That authority must be a host and port too (no userinfo, RFC
 *   9110 §4.2.4), and the scheme `http` or `https`.
 * - A request line longer than {@linkcode MAX_REQUEST_LINE} is 414 (RFC 9112 §3).
 *
 * What the API then reads is the request's URL, whose authority is the one judged here: it routes
 * by the URL's path and applies the host rule to the URL's host, never to the raw `Host` field.
 *
 * @module
 */

import { invalid, type TegamiError } from "../core/errors.ts";
import { json, type JsonAnswer } from "./respond.ts";

/** The longest request line read (method, target, version): past it, 414. */
export const MAX_REQUEST_LINE = 8 * 1024;

/**
 * `uri-host [":" port]`: an IP literal in brackets, or a reg-name of unreserved characters and
 * sub-delims (percent-encoding is left out: the URL standard refuses it in a host anyway).
 */
const HOST_FIELD = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=]+)(?::([0-9]*))?$/;

/** True when `value` is one valid `uri-host [":" port]`, as `Host` must be (RFC 9112 §3.2). */
export function validHost(value: string): boolean {
  const field = HOST_FIELD.exec(value);
  if (field === null) return false;
  if (field[1] !== undefined && field[1] !== "" && Number(field[1]) > 65535) return false;
  // What the URL standard makes of it must be the same authority, with nothing left over.
  try {
    const url = new URL(`http://${value}/`);
    return url.pathname === "/" && url.username === "" && url.password === "";
  } catch {
    return false;
  }
}

/** A refusal of the target or the authority: 400 or 414, with the error to answer. */
export interface TargetRefusal {
  /** 400 or 414. */
  status: 400 | 414;
  /** The error (`validation_failed`); its message says what was wrong. */
  error: TegamiError;
}

/** The answer to `refusal`: its status, and the error body every refusal has. */
export function refusalAnswer(refusal: TargetRefusal): JsonAnswer {
  const { code, message } = refusal.error;
  return json(refusal.status, { error: { code, message } });
}

/** The refusal of a request line longer than {@linkcode MAX_REQUEST_LINE}. */
export function tooLong(): TargetRefusal {
  return {
    status: 414,
    error: invalid(
      "target",
      `the request line is longer than ${MAX_REQUEST_LINE} bytes (RFC 9112 §3: 414)`,
    ),
  };
}

function badHost(reason: string): TargetRefusal {
  return { status: 400, error: invalid("Host", reason) };
}

/** The refusal of a missing `Host`. */
export function missingHost(): TargetRefusal {
  return badHost("required on every HTTP/1.x request (RFC 9112 §3.2)");
}

/** The refusal of a `Host` that is not one valid `uri-host [":" port]`. */
export function invalidHost(): TargetRefusal {
  return badHost(
    "not a valid host and optional port (RFC 9112 §3.2): no path, query, fragment or userinfo",
  );
}

/**
 * Judges a request `Deno.serve` parsed, from what it gives: `url` (which the runtime made from
 * `Host` and an origin-form target, or which is the absolute-form target itself) and the `Host`
 * field. `http2` says the request came over HTTP/2, whose `:authority` stands in for a missing
 * `Host`. Answers null when the request may be routed by `url`.
 */
export function judgeServed(
  method: string,
  url: string,
  host: string | null,
  http2: boolean,
): TargetRefusal | null {
  if (host !== null && !validHost(host)) return invalidHost();
  if (host === null && !http2) return missingHost();
  const scheme = url.indexOf("://");
  if (scheme < 0) return { status: 400, error: invalid("target", "not a valid request target") };
  const rest = url.slice(scheme + 3);
  let authorityEnd = rest.search(/[/?#]/);
  if (authorityEnd < 0) authorityEnd = rest.length;
  // Origin form: the runtime wrote `Host` and then the target, which starts with "/".
  const originForm = host !== null && rest.startsWith(host) && authorityEnd === host.length;
  if (!originForm) {
    // The target's own authority (absolute form, or HTTP/2's :authority): it wins over Host.
    const protocol = url.slice(0, scheme).toLowerCase();
    if (protocol !== "http" && protocol !== "https") {
      return { status: 400, error: invalid("target", "the scheme must be http or https") };
    }
    if (!validHost(rest.slice(0, authorityEnd))) {
      return {
        status: 400,
        error: invalid(
          "target",
          "its authority must be a host and an optional port, without userinfo (RFC 9110 §4.2.4)",
        ),
      };
    }
  }
  const targetLength = originForm ? rest.length - host!.length : url.length;
  if (method.length + targetLength + " HTTP/1.1".length + 1 > MAX_REQUEST_LINE) return tooLong();
  return null;
}
