-- Schedules: recurring jobs. next_at is the next tick to enqueue; a tick's job is inserted in the
-- transaction that moves next_at past it, holding the schedule's row lock and guarded by
-- revision, so servers ticking the same schedule at once enqueue each tick once.

CREATE TABLE schedules (
  name            text    PRIMARY KEY,
  queue           text    NOT NULL,
  cron            text    NOT NULL,
  timezone        text    NOT NULL,
  payload         text    NOT NULL,
  priority        integer NOT NULL,
  max_attempts    integer,
  lease_ms        bigint,
  backoff_base_ms bigint,
  backoff_max_ms  bigint,
  missed          text    NOT NULL,
  paused          boolean NOT NULL DEFAULT false,
  next_at         bigint,
  last_tick_at    bigint,
  last_job_id     bigint,
  revision        integer NOT NULL,
  created_at      bigint  NOT NULL,
  updated_at      bigint  NOT NULL
);

-- the scheduler's next deadline and its due schedules
CREATE INDEX schedules_due ON schedules (next_at) WHERE NOT paused AND next_at IS NOT NULL;
