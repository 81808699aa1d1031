/**
 * Which requests the Amazon SQS API that shares the server's port answers (docs/sqs.md), so that
 * the checks of tegami's own API leave them to the SQS tests.
 *
 * @module
 */

/** Whether a request is POST / or POST to a queue URL of the default account. */
export function isSqsRequest(method: string, path: string): boolean {
  if (method.toUpperCase() !== "POST") return false;
  const pathname = path.split("?", 1)[0].split("#", 1)[0];
  return pathname === "/" || /^\/000000000000\/[^/]+$/.test(pathname);
}
