/**
 * AWS Signature Version 4 (`AWS4-HMAC-SHA256`), as the SQS API checks it: the `Authorization`
 * header form and the presigned query form (`X-Amz-Algorithm`, `X-Amz-Credential`, `X-Amz-Date`,
 * `X-Amz-Expires`, `X-Amz-SignedHeaders`, `X-Amz-Signature`).
 *
 * The canonical request is the method, the path (each character outside RFC 3986's unreserved
 * set percent-encoded again, as non-S3 services sign it), the query sorted by encoded name and
 * value (the signature left out), each signed header as `name:value` with its value trimmed and
 * inner runs of spaces made one, the signed header names, and the SHA-256 of the body. The string
 * to sign adds the time and the scope `date/region/service/aws4_request`; the key is the HMAC
 * chain from `"AWS4" + secret` through date, region, service and `aws4_request`.
 *
 * A request is refused when it is signed more than 15 minutes away from the server's time, or a
 * presigned one after its `X-Amz-Expires`.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

/** What a request says about its signature. */
export interface SigV4Claim {
  /** `header` (`Authorization`) or `query` (presigned URL). */
  form: "header" | "query";
  /** The access key id. */
  accessKey: string;
  /** The scope's date, `YYYYMMDD`. */
  date: string;
  /** The scope's region. */
  region: string;
  /** The scope's service. */
  service: string;
  /** The signed header names, lower case, in the order given. */
  signedHeaders: string[];
  /** The signature, lowercase hex. */
  signature: string;
  /** The request time, `YYYYMMDDTHHMMSSZ`. */
  amzDate: string;
  /** For a presigned request, seconds it stays valid. */
  expires: number | null;
}

/** Why a signature was refused. */
export type SigV4Problem = "malformed" | "expired" | "mismatch";

/** A refused signature, with the reason and a message safe to show. */
export class SigV4Error extends Error {
  /** Why. */
  readonly problem: SigV4Problem;

  /** Makes an error. */
  constructor(problem: SigV4Problem, message: string) {
    super(message);
    this.name = "SigV4Error";
    this.problem = problem;
  }
}

/** The request a signature is checked against. */
export interface SignedRequest {
  /** The method. */
  method: string;
  /** The URL as received (its path and query are signed). */
  url: URL;
  /** Header lookup by name. */
  header(name: string): string | null;
  /** The body. */
  body: Uint8Array;
}

/** The signing algorithm's name. */
export const SIGV4_ALGORITHM = "AWS4-HMAC-SHA256";

/** How far from the server's time a request may be signed, ms. */
export const MAX_CLOCK_SKEW_MS = 15 * 60 * 1000;

const HEX64 = /^[0-9a-f]{64}$/;
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;
const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;
const MAX_FIELD = 4096;

function malformed(message: string): SigV4Error {
  return new SigV4Error("malformed", message);
}

/** The credential scope `KEY/DATE/REGION/SERVICE/aws4_request`, split from the right. */
function credential(text: string): Pick<SigV4Claim, "accessKey" | "date" | "region" | "service"> {
  const parts = text.split("/");
  if (parts.length < 5 || parts[parts.length - 1] !== "aws4_request") {
    throw malformed(
      "Credential should be scoped to a valid region, service and aws4_request terminal",
    );
  }
  const service = parts[parts.length - 2];
  const region = parts[parts.length - 3];
  const date = parts[parts.length - 4];
  const accessKey = parts.slice(0, -4).join("/");
  if (!/^\d{8}$/.test(date) || region === "" || service === "" || accessKey === "") {
    throw malformed("Credential should be scoped to a valid date, region and service");
  }
  return { accessKey, date, region, service };
}

function signedHeaderList(text: string): string[] {
  const names = text.split(";");
  if (names.length > 64 || names.some((name) => !HEADER_NAME.test(name))) {
    throw malformed("SignedHeaders must be lower-case header names separated by ;");
  }
  return names;
}

/**
 * The signature a request claims, or null when it carries none of SigV4's shape (no
 * `Authorization: AWS4-HMAC-SHA256 …`, no `X-Amz-Algorithm` in its query). Throws `malformed`
 * for one that has the shape but not the parts.
 */
export function sigV4Claim(url: URL, header: (name: string) => string | null): SigV4Claim | null {
  const authorization = header("authorization");
  if (authorization !== null) {
    if (authorization.length > MAX_FIELD) throw malformed("Authorization header is too long");
    const match = /^AWS4-HMAC-SHA256\s+(.*)$/s.exec(authorization.trim());
    if (match === null) return null;
    const fields = new Map<string, string>();
    for (const part of match[1].split(",")) {
      const at = part.indexOf("=");
      if (at < 0) throw malformed(`Authorization header has a part without "=": ${part.trim()}`);
      fields.set(part.slice(0, at).trim(), part.slice(at + 1).trim());
    }
    const scope = fields.get("Credential");
    const signed = fields.get("SignedHeaders");
    const signature = fields.get("Signature");
    if (scope === undefined || signed === undefined || signature === undefined) {
      throw malformed(
        "Authorization header requires Credential, SignedHeaders and Signature parameters",
      );
    }
    if (!HEX64.test(signature)) throw malformed("Signature must be 64 lowercase hex digits");
    const amzDate = header("x-amz-date") ?? "";
    if (!AMZ_DATE.test(amzDate)) {
      throw malformed("Authorization header requires an X-Amz-Date header (YYYYMMDDTHHMMSSZ)");
    }
    return {
      form: "header",
      ...credential(scope),
      signedHeaders: signedHeaderList(signed),
      signature,
      amzDate,
      expires: null,
    };
  }
  const query = url.searchParams;
  const algorithm = query.get("X-Amz-Algorithm");
  if (algorithm === null) return null;
  if (algorithm !== SIGV4_ALGORITHM) throw malformed(`X-Amz-Algorithm must be ${SIGV4_ALGORITHM}`);
  const scope = query.get("X-Amz-Credential");
  const signed = query.get("X-Amz-SignedHeaders");
  const signature = query.get("X-Amz-Signature");
  const amzDate = query.get("X-Amz-Date");
  const expires = query.get("X-Amz-Expires");
  if (
    scope === null || signed === null || signature === null || amzDate === null ||
    expires === null
  ) {
    throw malformed(
      "A presigned request requires X-Amz-Credential, X-Amz-Date, X-Amz-Expires, " +
        "X-Amz-SignedHeaders and X-Amz-Signature",
    );
  }
  if (!HEX64.test(signature)) throw malformed("X-Amz-Signature must be 64 lowercase hex digits");
  if (!AMZ_DATE.test(amzDate)) throw malformed("X-Amz-Date must be YYYYMMDDTHHMMSSZ");
  if (!/^[0-9]{1,6}$/.test(expires) || Number(expires) < 1 || Number(expires) > 604800) {
    throw malformed("X-Amz-Expires must be from 1 to 604800 seconds");
  }
  return {
    form: "query",
    ...credential(scope),
    signedHeaders: signedHeaderList(signed),
    signature,
    amzDate,
    expires: Number(expires),
  };
}

/** RFC 3986 percent-encoding: everything but `A-Z a-z 0-9 - _ . ~`. */
function encode(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

function hmac(key: string | Uint8Array, data: string): Uint8Array {
  return createHmac("sha256", key).update(data, "utf8").digest();
}

function canonicalQuery(url: URL, form: SigV4Claim["form"]): string {
  const pairs: [string, string][] = [];
  for (const [name, value] of url.searchParams) {
    if (form === "query" && name === "X-Amz-Signature") continue;
    pairs.push([encode(name), encode(value)]);
  }
  pairs.sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
  return pairs.map(([name, value]) => `${name}=${value}`).join("&");
}

function canonicalPath(url: URL): string {
  const path = url.pathname === "" ? "/" : url.pathname;
  return path.split("/").map(encode).join("/");
}

/** The time an `X-Amz-Date` names, ms since the epoch. */
function amzTime(amzDate: string): number {
  const [, y, mo, d, h, mi, s] = AMZ_DATE.exec(amzDate)!;
  return Date.UTC(+y, +mo - 1, +d, +h, +mi, +s);
}

/** The signature `request` should carry for `claim` when signed with `secret`. */
export function expectedSignature(
  claim: SigV4Claim,
  request: SignedRequest,
  secret: string,
): string {
  const headers = claim.signedHeaders.map((name) => {
    const value = request.header(name);
    if (value === null) throw new SigV4Error("mismatch", `Signed header ${name} is missing`);
    return `${name}:${value.trim().replace(/\s+/g, " ")}\n`;
  }).join("");
  const bodyHash = sha256Hex(request.body);
  const declared = request.header("x-amz-content-sha256");
  if (declared !== null && declared !== bodyHash) {
    throw new SigV4Error("mismatch", "X-Amz-Content-Sha256 is not the SHA-256 of the body");
  }
  const canonical = [
    request.method,
    canonicalPath(request.url),
    canonicalQuery(request.url, claim.form),
    headers,
    claim.signedHeaders.join(";"),
    bodyHash,
  ].join("\n");
  const scope = `${claim.date}/${claim.region}/${claim.service}/aws4_request`;
  const toSign = `${SIGV4_ALGORITHM}\n${claim.amzDate}\n${scope}\n${sha256Hex(canonical)}`;
  let key = hmac(`AWS4${secret}`, claim.date);
  key = hmac(key, claim.region);
  key = hmac(key, claim.service);
  key = hmac(key, "aws4_request");
  return createHmac("sha256", key).update(toSign, "utf8").digest("hex");
}

/**
 * Checks the time of a claim against `now` (ms): throws `expired` for one signed too far away, or
 * a presigned one past its expiry, and `malformed` when the scope's date is not the request's.
 */
export function checkSigV4Time(claim: SigV4Claim, now: number): void {
  if (!claim.amzDate.startsWith(claim.date)) {
    throw malformed("The credential scope's date is not the date of X-Amz-Date");
  }
  const at = amzTime(claim.amzDate);
  if (claim.expires !== null) {
    if (now > at + claim.expires * 1000) {
      throw new SigV4Error("expired", "Request has expired");
    }
    if (at - now > MAX_CLOCK_SKEW_MS) {
      throw new SigV4Error("expired", "Signature not yet current");
    }
    return;
  }
  if (Math.abs(now - at) > MAX_CLOCK_SKEW_MS) {
    throw new SigV4Error(
      "expired",
      `Signature expired: ${claim.amzDate} is more than 15 minutes away from the server's time`,
    );
  }
}

/** Throws `mismatch` unless `request` carries the signature `claim` says, signed with `secret`. */
export function verifySigV4(claim: SigV4Claim, request: SignedRequest, secret: string): void {
  const expected = Buffer.from(expectedSignature(claim, request, secret), "utf8");
  const given = Buffer.from(claim.signature, "utf8");
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    throw new SigV4Error(
      "mismatch",
      "The request signature we calculated does not match the signature you provided. " +
        "Check your AWS Secret Access Key and signing method.",
    );
  }
}
