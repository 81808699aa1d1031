/**
 * The flow page's layered layout, checked without a browser: `flowLayout()` is taken from the
 * served script and run here (flows_test.ts draws real flows in a real browser).
 */

import assert from "node:assert/strict";
import { DASHBOARD_ASSETS } from "../../lib/dashboard/assets.ts";

const script = DASHBOARD_ASSETS.find((asset) => asset.path === "/dashboard.js")!.body;

interface Node {
  ref: string;
  id: number;
  queue: string;
  state: string;
  depends_on: { ref: string; on_failure: string }[];
}

interface Layout {
  depth: Int32Array;
  slot: Float64Array;
  drawn: number[];
  edges: { from: number; to: number; rule: string }[];
  columns: number;
  rows: number;
  perColumn: number[];
  edgeCount: number;
  hiddenNodes: number;
  hiddenEdges: number;
}

/** The script's `flowLayout`, which uses nothing from around it. */
const flowLayout: (nodes: Node[], maxNodes: number, maxEdges: number) => Layout = (() => {
  const start = script.indexOf("  function flowLayout(");
  assert.ok(start >= 0, "the script declares flowLayout()");
  const end = script.indexOf("\n  }\n", start);
  return new Function(`${script.slice(start, end + 4)}\nreturn flowLayout;`)();
})();

/** A node whose prerequisites are `deps` (`ref` or `ref:rule`). */
function node(ref: string, ...deps: string[]): Node {
  return {
    ref,
    id: 0,
    queue: "q",
    state: "blocked",
    depends_on: deps.map((d) => {
      const [dep, rule = "cancel"] = d.split(":");
      return { ref: dep, on_failure: rule };
    }),
  };
}

/** `layers` layers of `width` nodes, each after its left neighbour's layer twice over. */
function layered(layers: number, width: number): Node[] {
  const nodes: Node[] = [];
  for (let layer = 0; layer < layers; layer++) {
    for (let k = 0; k < width; k++) {
      const deps = layer === 0
        ? []
        : [`n${layer - 1}.${k}`, `n${layer - 1}.${(k * 7 + 3) % width}:ignore`];
      nodes.push(node(`n${layer}.${k}`, ...new Set(deps)));
    }
  }
  return nodes;
}

const depthOf = (nodes: Node[], layout: Layout) =>
  Object.fromEntries(nodes.map((n, i) => [n.ref, layout.depth[i]]));

Deno.test("flowLayout() puts each node in the column of its longest path from a root", () => {
  const nodes = [
    node("fetch"),
    node("resize", "fetch"),
    node("thumb", "fetch:ignore"),
    node("upload", "resize", "thumb:run", "fetch"),
    node("notify", "upload:run", "fetch"),
    node("alone"),
  ];
  const layout = flowLayout(nodes, 100, 100);
  assert.deepEqual(depthOf(nodes, layout), {
    fetch: 0,
    resize: 1,
    thumb: 1,
    upload: 2,
    notify: 3,
    alone: 0,
  });
  assert.equal(layout.columns, 4);
  assert.deepEqual(layout.perColumn, [2, 2, 1, 1]);
  assert.equal(layout.rows, 2);
  // Shorter columns sit on whole rows too, so the gaps between rows run clear across.
  assert.ok(layout.drawn.every((i) => Number.isInteger(layout.slot[i])));
  assert.equal(layout.drawn.length, 6);
  assert.equal(layout.edges.length, 7);
  assert.equal(layout.edgeCount, 7);
  assert.equal(layout.hiddenNodes, 0);
  assert.equal(layout.hiddenEdges, 0);
  // Every edge points right, keeps its rule, and joins the nodes it names.
  const ruleOf = (from: number, to: number) =>
    nodes[to].depends_on.find((e) => e.ref === nodes[from].ref)!.on_failure;
  for (const e of layout.edges) {
    assert.ok(layout.depth[e.to] > layout.depth[e.from], `${nodes[e.to].ref} right of its prereq`);
    assert.equal(e.rule, ruleOf(e.from, e.to));
  }
});

Deno.test("flowLayout() gives the nodes of a column distinct rows", () => {
  const nodes = layered(4, 9);
  const layout = flowLayout(nodes, 1000, 1000);
  assert.equal(layout.rows, 9);
  for (let c = 0; c < layout.columns; c++) {
    const slots = layout.drawn.filter((i) => layout.depth[i] === c).map((i) => layout.slot[i]);
    assert.equal(new Set(slots).size, 9, `column ${c}`);
    for (const y of slots) assert.ok(Number.isInteger(y) && y >= 0 && y <= 8);
  }
});

Deno.test("flowLayout() draws the first nodes by depth within its limits and counts the rest", () => {
  const nodes = layered(100, 100); // 10,000 nodes, 19,800 edges
  const layout = flowLayout(nodes, 400, 500);
  assert.equal(layout.drawn.length, 400);
  assert.equal(layout.hiddenNodes, 9600);
  assert.equal(layout.columns, 4);
  assert.equal(layout.perColumn.length, 100);
  assert.ok(layout.perColumn.every((n) => n === 100));
  assert.equal(layout.edgeCount, 19_800);
  assert.equal(layout.edges.length, 500);
  assert.equal(layout.hiddenEdges, 19_300);
  // Whole columns first: nothing drawn is deeper than anything left out.
  const drawn = new Set(layout.drawn);
  let deepestDrawn = 0;
  let shallowestLeft = Infinity;
  nodes.forEach((_, i) => {
    if (drawn.has(i)) deepestDrawn = Math.max(deepestDrawn, layout.depth[i]);
    else shallowestLeft = Math.min(shallowestLeft, layout.depth[i]);
    assert.equal(Number.isNaN(layout.slot[i]), !drawn.has(i));
  });
  assert.ok(deepestDrawn <= shallowestLeft);
  for (const e of layout.edges) assert.ok(drawn.has(e.from) && drawn.has(e.to));

  // A column cut short by the limit is drawn in part.
  const part = flowLayout(nodes, 250, 10_000);
  assert.equal(part.drawn.length, 250);
  assert.equal(part.columns, 3);
  assert.equal(part.drawn.filter((i) => part.depth[i] === 2).length, 50);
});

Deno.test("flowLayout() places the nodes of a cycle past the deepest column instead of hanging", () => {
  const nodes = [node("a"), node("b", "a", "c"), node("c", "b")];
  const layout = flowLayout(nodes, 10, 10);
  assert.deepEqual(depthOf(nodes, layout), { a: 0, b: 1, c: 1 });
  assert.equal(layout.drawn.length, 3);
});

Deno.test("flowLayout() ignores edges to refs the flow does not hold", () => {
  const nodes = [node("a"), node("b", "a", "gone")];
  const layout = flowLayout(nodes, 10, 10);
  assert.deepEqual(depthOf(nodes, layout), { a: 0, b: 1 });
  assert.equal(layout.edgeCount, 1);
  assert.deepEqual(flowLayout([], 10, 10).drawn, []);
});
