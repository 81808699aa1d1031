-- The retention sweeps read one queue's finished jobs of one state from the oldest finish and stop
-- at the cutoff. Keyed by finished_at alone, a sweep passed over every job that queues keeping
-- theirs longer still held, and read a queue's dead jobs whole through jobs_browse, at every sweep.
-- finished_at is set exactly while a job is done, cancelled or dead, so the index holds those, and
-- a query bounding finished_at can use it.

DROP INDEX jobs_finished;
CREATE INDEX jobs_finished ON jobs (queue, state, finished_at) WHERE finished_at IS NOT NULL;
