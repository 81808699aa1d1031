-- A queue's dead-letter queue (core/queue_settings.ts, dead_letter_queue), and on a job the queue
-- it was moved from when it ran out of attempts there (null: never moved).

ALTER TABLE queue_settings ADD COLUMN dead_letter_queue text;
ALTER TABLE jobs ADD COLUMN dead_lettered_from text;
