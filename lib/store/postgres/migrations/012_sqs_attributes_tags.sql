-- A queue's SQS attributes that only the SQS API applies (core/queue_settings.ts,
-- sqs_attributes) and its tags: each JSON text of an object of strings, null for none.

ALTER TABLE queue_settings ADD COLUMN sqs_attributes text;
ALTER TABLE queue_settings ADD COLUMN tags text;
