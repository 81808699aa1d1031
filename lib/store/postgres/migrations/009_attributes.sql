-- A job's attributes (core/attributes.ts): JSON text, null for none. Adding a nullable column
-- without a default rewrites nothing.

ALTER TABLE jobs ADD COLUMN attributes text;
