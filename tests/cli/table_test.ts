import assert from "node:assert/strict";
import fc from "fast-check";
import { textTable } from "../../lib/cli/table.ts";

Deno.test("textTable() puts the first column left and the numbers right, two spaces apart", () => {
  const out = textTable(["queue", "pending", "dead"], [["emails", "3", "0"], ["q", "120", "7"]]);
  assert.equal(
    out,
    "queue   pending  dead\n" +
      "emails        3     0\n" +
      "q           120     7\n",
  );
});

Deno.test("textTable() follows the alignment given and leaves a left last column unpadded", () => {
  const out = textTable(["id", "state", "error"], [["7", "dead", "boom"], ["12", "done", ""]], [
    "right",
    "left",
    "left",
  ]);
  assert.equal(out, "id  state  error\n 7  dead   boom\n12  done   \n");
});

Deno.test("textTable() of a header alone prints the header line", () => {
  assert.equal(textTable(["name", "n"], []), "name  n\n");
});

Deno.test("textTable() lines are as wide as the widest cells, each cell in its place", () => {
  const cell = fc.stringMatching(/^[a-z0-9]{0,8}$/);
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 5 }).chain((n) =>
        fc.tuple(
          fc.array(cell, { minLength: n, maxLength: n }),
          fc.array(fc.array(cell, {
            minLength: n,
            maxLength: n,
          })),
        )
      ),
      ([header, rows]) => {
        // Every column right-aligned: every line is padded to the full width.
        const align = header.map(() => "right" as const);
        const lines = textTable(header, rows, align).split("\n");
        assert.equal(lines.pop(), "", "the table ends with a newline");
        assert.equal(lines.length, rows.length + 1);
        const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
        const width = widths.reduce((a, b) => a + b, 0) + 2 * (header.length - 1);
        [header, ...rows].forEach((cells, l) => {
          assert.equal(lines[l].length, width);
          let at = 0;
          cells.forEach((c, i) => {
            assert.equal(lines[l].slice(at, at + widths[i]), c.padStart(widths[i]));
            at += widths[i] + 2;
          });
        });
      },
    ),
  );
});
