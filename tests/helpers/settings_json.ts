/**
 * The queue settings object as the API answers it for a queue nobody configured, written out
 * literally (not imported from the server) so tests of the wire format catch a changed default.
 *
 * @module
 */

/** `GET /v1/queues/{queue}/settings` of an unconfigured queue, and `settings` in its stats. */
export const DEFAULT_SETTINGS_JSON = Object.freeze({
  concurrency: null,
  rate: null,
  group_limit: 1,
  max_attempts: null,
  lease_ms: null,
  backoff: null,
  retain_done_ms: null,
  retain_dead_ms: null,
  retain_pending_ms: null,
  dead_letter_queue: null,
});
