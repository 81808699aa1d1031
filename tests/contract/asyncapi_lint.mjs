// Validates the AsyncAPI document with the AsyncAPI initiative's own parser (which runs its
// Spectral ruleset): exits 1 on any error, and prints every diagnostic. Run with Node from
// `deno task contract`, where the tools in tools/ are installed.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(new URL("./tools/package.json", import.meta.url));
const { Parser } = require("@asyncapi/parser");

const file = process.argv[2];
const parser = new Parser();
const { document, diagnostics } = await parser.parse(readFileSync(file, "utf8"));
const names = ["error", "warning", "info", "hint"];
for (const d of diagnostics) {
  console.log(`${names[d.severity]} ${d.code} at ${d.path.join(".")}: ${d.message}`);
}
const errors = diagnostics.filter((d) => d.severity === 0).length;
const warnings = diagnostics.filter((d) => d.severity === 1).length;
const ops = document ? document.operations().length : 0;
const messages = document ? document.allMessages().length : 0;
console.log(
  `asyncapi: ${ops} operations, ${messages} messages, ${errors} errors, ${warnings} warnings`,
);
process.exit(errors === 0 && document ? 0 : 1);
