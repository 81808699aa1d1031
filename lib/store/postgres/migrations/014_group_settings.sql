-- Fair shares (core/group_settings.ts): a group's own weight (kept as the stride its turn moves
-- by per lease, TURN_UNIT / weight with TURN_UNIT = 1000000), concurrency and rate; the buckets of
-- groups with a rate, with when a group left without a token gets its next (the grouped claim
-- skips it until then). Group names keep the database's collation, as jobs.grp has it, so that
-- every join and lookup between the three tables and jobs can use their indexes.

CREATE TABLE group_settings (
  queue       text             NOT NULL,
  grp         text             NOT NULL,
  weight      double precision NOT NULL,
  stride      bigint           NOT NULL,
  concurrency integer,
  rate_limit  integer,
  rate_per_ms bigint,
  updated_at  bigint           NOT NULL,
  PRIMARY KEY (queue, grp)
);
-- whether a queue has groups with a rate (the claim then settles their buckets)
CREATE INDEX group_settings_rated ON group_settings (queue) WHERE rate_limit IS NOT NULL;

CREATE TABLE group_buckets (
  queue      text             NOT NULL,
  grp        text             NOT NULL,
  tokens     double precision NOT NULL,
  at         bigint           NOT NULL,
  held_until bigint,
  PRIMARY KEY (queue, grp)
);

-- Turns become strides of TURN_UNIT: served groups keep their order, one unit apart; the claim
-- moves them now, not the trigger. The turn index covers every group (the front is the largest
-- turn of any).
UPDATE job_groups j SET turn = r.k * 1000000
  FROM (SELECT queue, grp, dense_rank() OVER (PARTITION BY queue ORDER BY turn) AS k
        FROM job_groups WHERE turn > 0) r
  WHERE j.queue = r.queue AND j.grp = r.grp;
DROP INDEX job_groups_turn;
CREATE INDEX job_groups_turn ON job_groups (queue, turn);
DROP SEQUENCE job_group_turns;

CREATE OR REPLACE FUNCTION job_groups_count() RETURNS trigger LANGUAGE plpgsql AS $$
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
  -- The claim moves the turns of the groups it served (lib/store/claim_order.ts).
  UPDATE job_groups SET pending = pending + d_pending, leased = leased + d_leased
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
