import assert from "node:assert/strict";
import { LAYOUTS, measure } from "../../bench/sqlite_layouts.ts";

Deno.test("sqlite_layouts: every layout moves its jobs, and keeping done jobs costs a sweep", () => {
  const kb = Object.fromEntries(
    Object.entries(LAYOUTS).map(([name, layout]) => [name, measure(layout, 2000, 40, 4096)]),
  );
  for (const [name, { jobs, sweep }] of Object.entries(kb)) {
    assert.ok(jobs > 0, `${name} wrote nothing`);
    assert.equal(sweep > 0, LAYOUTS[name].sweep !== null, `${name}'s sweep`);
  }
  // Fewer structures write less; an index-free insert and delete writes least.
  const total = (name: string) => kb[name].jobs + kb[name].sweep;
  assert.ok(total("store") > total("lean-keep"));
  assert.ok(total("store") > total("store-delete"));
  assert.ok(total("lean-delete") > total("floor"));
});
