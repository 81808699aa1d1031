-- How long a pending job waits for a consumer (core/queue_settings.ts, retain_pending_ms); null:
-- until it is delivered.

ALTER TABLE queue_settings ADD COLUMN retain_pending_ms bigint;
