/**
 * The plain-text tables the client commands print (`tegami stats`, `tegami dead list`): a header,
 * columns as wide as their widest cell, two spaces apart, the first column to the left and the
 * numbers to the right.
 *
 * @module
 */

/** Where a column's cells sit within its width. */
export type Align = "left" | "right";

/**
 * The table as lines ending in `\n`. `align` gives each column's alignment; by default the first
 * is left-aligned and the others right-aligned. A left-aligned last column is not padded.
 */
export function textTable(header: string[], rows: string[][], align?: Align[]): string {
  const sides = header.map((_, i) => align?.[i] ?? (i === 0 ? "left" : "right"));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) =>
      sides[i] === "right"
        ? c.padStart(widths[i])
        : i === cells.length - 1
        ? c
        : c.padEnd(widths[i])
    ).join("  ");
  return [line(header), ...rows.map(line)].join("\n") + "\n";
}
