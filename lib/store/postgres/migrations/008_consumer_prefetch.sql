-- Each server's subscribers of a queue also give their summed prefetch, so a server that only
-- feeds a queue others consume knows how much credit its backlog is measured against (the intake
-- gate, see docs/protocol.md "Delivery before intake"). A server of an older version writes no
-- prefetch (0): the others then hold nothing back for its consumers, as before.

ALTER TABLE consumers ADD COLUMN prefetch integer NOT NULL DEFAULT 0;
