-- Ordering groups. A grouped job is claimed through its group (job_groups: how many of its jobs
-- are pending and leased, and when it was last served), never through jobs_pending, which now
-- holds only ungrouped jobs: a hot group's backlog is never scanned by a claim. A claim locks
-- the rows of the groups it takes from, so servers claiming at once never exceed a group's
-- limit. The trigger keeps job_groups exact in the transaction of every change of state,
-- whichever statement makes it; it fires only for grouped jobs.

ALTER TABLE jobs ADD COLUMN grp text;
DROP INDEX jobs_pending;
CREATE INDEX jobs_pending ON jobs (queue, priority DESC, id)
  WHERE state = 'pending' AND grp IS NULL;
CREATE INDEX jobs_group_pending ON jobs (queue, grp, priority DESC, id)
  WHERE state = 'pending' AND grp IS NOT NULL;

CREATE TABLE job_groups (
  queue   text    NOT NULL,
  grp     text    NOT NULL,
  pending integer NOT NULL DEFAULT 0,
  leased  integer NOT NULL DEFAULT 0,
  turn    bigint  NOT NULL DEFAULT 0, -- round-robin: larger = served more recently
  PRIMARY KEY (queue, grp)
);
CREATE INDEX job_groups_turn ON job_groups (queue, turn) WHERE pending > 0;
CREATE SEQUENCE job_group_turns;

CREATE FUNCTION job_groups_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d_pending integer := 0;
  d_leased integer := 0;
  now_pending integer;
  now_leased integer;
  q text;
  g text;
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    q := OLD.queue; g := OLD.grp;
    d_pending := d_pending - (OLD.state = 'pending')::integer;
    d_leased := d_leased - (OLD.state = 'leased')::integer;
  END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') THEN
    q := NEW.queue; g := NEW.grp;
    d_pending := d_pending + (NEW.state = 'pending')::integer;
    d_leased := d_leased + (NEW.state = 'leased')::integer;
  END IF;
  IF d_pending = 0 AND d_leased = 0 THEN
    RETURN NULL;
  END IF;
  -- Usually the group's row is there: one UPDATE; an INSERT only for a group new to the queue.
  UPDATE job_groups SET pending = pending + d_pending, leased = leased + d_leased,
    turn = CASE WHEN d_leased > 0 THEN nextval('job_group_turns') ELSE turn END
  WHERE queue = q AND grp = g
  RETURNING pending, leased INTO now_pending, now_leased;
  IF NOT FOUND THEN
    INSERT INTO job_groups AS t (queue, grp, pending, leased)
      VALUES (q, g, d_pending, d_leased)
    ON CONFLICT (queue, grp) DO UPDATE SET pending = t.pending + excluded.pending,
      leased = t.leased + excluded.leased
    RETURNING pending, leased INTO now_pending, now_leased;
  END IF;
  -- A group with nothing pending or leased is forgotten (its name may never come again).
  IF now_pending = 0 AND now_leased = 0 THEN
    DELETE FROM job_groups WHERE queue = q AND grp = g AND pending = 0 AND leased = 0;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER jobs_group_insert AFTER INSERT ON jobs
  FOR EACH ROW WHEN (NEW.grp IS NOT NULL) EXECUTE FUNCTION job_groups_count();
CREATE TRIGGER jobs_group_update AFTER UPDATE OF state ON jobs
  FOR EACH ROW WHEN (NEW.grp IS NOT NULL AND OLD.state <> NEW.state)
  EXECUTE FUNCTION job_groups_count();
CREATE TRIGGER jobs_group_delete AFTER DELETE ON jobs
  FOR EACH ROW WHEN (OLD.grp IS NOT NULL) EXECUTE FUNCTION job_groups_count();

-- The token bucket of a queue with a rate (core/rate_bucket.ts). Its row is locked by every
-- claim of a queue with a concurrency or a rate, so servers claiming from it take turns.
CREATE TABLE queue_buckets (
  queue  text             PRIMARY KEY,
  tokens double precision NOT NULL,
  at     bigint           NOT NULL
);
