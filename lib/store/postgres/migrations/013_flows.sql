-- Flows (core/flow.ts): a job's flow and ref, how many of its prerequisites' edges are not met
-- while it is blocked; the flows, with their dedup keys; the edges, read by prerequisite when one
-- ends and by dependent (in depends_on order) when one is delivered.

ALTER TABLE jobs ADD COLUMN flow_id bigint;
ALTER TABLE jobs ADD COLUMN flow_ref text;
ALTER TABLE jobs ADD COLUMN waiting_on integer NOT NULL DEFAULT 0;
CREATE INDEX jobs_flow ON jobs (flow_id, id) WHERE flow_id IS NOT NULL;
-- a flow's counts by state, and whether any of its nodes has not ended (retention)
CREATE INDEX jobs_flow_state ON jobs (flow_id, state) WHERE flow_id IS NOT NULL;

CREATE TABLE flows (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  key        text   UNIQUE,
  created_at bigint NOT NULL
);

CREATE TABLE flow_edges (
  prereq_id  bigint  NOT NULL,
  job_id     bigint  NOT NULL,
  ord        integer NOT NULL,
  on_failure text    NOT NULL,
  met        boolean NOT NULL DEFAULT false,
  PRIMARY KEY (prereq_id, job_id)
);
CREATE INDEX flow_edges_job ON flow_edges (job_id, ord);
