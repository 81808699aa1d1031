-- Dedup windows and progress reports.
--
-- key_expires_at: when a job's key stops blocking duplicates (null: as long as it is stored).
-- A job whose window has passed gives its key up to the next job with that key: the key moves
-- to released_key, out of the unique index jobs_key, and the job still shows it.
-- progress, progress_at: the last progress a lease holder reported (JSON text) and when.

ALTER TABLE jobs
  ADD COLUMN key_expires_at bigint,
  ADD COLUMN released_key   text,
  ADD COLUMN progress       text,
  ADD COLUMN progress_at    bigint;
