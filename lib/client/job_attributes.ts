/**
 * A job's attributes as the client sends and receives them: named, typed values stored with the
 * job beside its payload (its trace context among them), and the server's limits on them.
 *
 * @module
 */

/** A job's attributes by name: `type` is `String`, `Number` or `Binary` (base64 value). */
export type JobAttributes = Record<string, { type: string; value: string }>;

/** The most attributes a job carries (the server's limit). */
export const MAX_ATTRIBUTES = 10;

/** The most bytes a job's attributes take as stored, as JSON (the server's limit). */
export const MAX_ATTRIBUTES_BYTES = 4096;
