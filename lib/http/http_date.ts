/**
 * The `Date` field of every answer the server writes itself (RFC 9110 §6.6.1: an origin server
 * with a clock sends it on every 2xx, 3xx and 4xx answer; tegami sends it on all of them).
 *
 * @module
 */

let dateSecond = -1;
let dateText = "";

/** The current time as an HTTP date (IMF-fixdate), formatted at most once a second. */
export function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(now).toUTCString();
  }
  return dateText;
}
