-- Queue settings: one row per queue with settings (settings_row.ts); a queue without a row has the
-- defaults. Apart from `queues` (pause), which other features share. A claim reads its queue's
-- row inside its own transaction, so every server sees a change from its commit on.

CREATE TABLE queue_settings (
  name            text    PRIMARY KEY,
  concurrency     integer,
  rate_limit      integer,
  rate_per_ms     bigint,
  group_limit     integer NOT NULL DEFAULT 1,
  max_attempts    integer,
  lease_ms        bigint,
  backoff_base_ms bigint,
  backoff_max_ms  bigint,
  retain_done_ms  bigint,
  retain_dead_ms  bigint,
  updated_at      bigint  NOT NULL
);
