/**
 * Reading a SQLite database file the way a tool outside the server would: a read-only connection of
 * its own, closed before the answer is returned.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";

/** The page size a database file was made with, read from its header. */
export function pageSizeOf(path: string): number {
  const reader = new DatabaseSync(path, { readOnly: true });
  try {
    return (reader.prepare("PRAGMA page_size").get() as { page_size: number }).page_size;
  } finally {
    reader.close();
  }
}
