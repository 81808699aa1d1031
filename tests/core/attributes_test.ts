import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type Attribute,
  attributeNameProblem,
  attributesText,
  attributeTypeProblem,
  attributeValueProblem,
  isBinaryType,
  readAttributes,
} from "../../lib/core/attributes.ts";

Deno.test("attributeNameProblem() accepts 1 to 256 letters, digits, _, - and .", () => {
  for (const name of ["a", "trace_id", "Order-Id.v2", "x".repeat(256), "AWSx", "amazonian"]) {
    assert.equal(attributeNameProblem(name), null, name);
  }
  for (const name of ["", "x".repeat(257), "a b", "é", "a/b", "a:b"]) {
    assert.equal(
      attributeNameProblem(name),
      "names hold 1 to 256 letters, digits, underscores, hyphens and periods",
      JSON.stringify(name),
    );
  }
});

Deno.test("attributeNameProblem() reserves AWS. and Amazon. in any case", () => {
  for (const name of ["AWS.TraceHeader", "aws.x", "Amazon.y", "AMAZON.z"]) {
    assert.equal(attributeNameProblem(name), "names starting with AWS. or Amazon. are reserved");
  }
});

Deno.test("attributeNameProblem() refuses a leading, trailing or doubled period", () => {
  for (const name of [".a", "a.", "a..b", "."]) {
    assert.equal(
      attributeNameProblem(name),
      "names must not start or end with a period, nor hold two in a row",
      name,
    );
  }
  assert.equal(attributeNameProblem("a.b.c"), null);
});

Deno.test("attributeTypeProblem() takes String, Number or Binary with an optional .label", () => {
  const valid = ["String", "Number", "Binary", "String.json", "Number.int", "Binary.gzip"];
  for (const type of [...valid, `String.${"l".repeat(249)}`]) {
    assert.equal(attributeTypeProblem(type), null, type);
  }
  const invalid = ["string", "Strings", "String.", "String.a b", "Text", "", "Number .x"];
  for (const type of [...invalid, `String.${"l".repeat(250)}`]) {
    assert.equal(
      attributeTypeProblem(type),
      "types are String, Number or Binary, with an optional .label",
      type,
    );
  }
});

Deno.test("attributeValueProblem() wants a number for Number and base64 for Binary", () => {
  for (const value of ["1", "-1.5", "+3e10", ".5", "5.", "0012", "1E-7"]) {
    assert.equal(attributeValueProblem("Number", value), null, value);
    assert.equal(attributeValueProblem("Number.int", value), null, value);
  }
  for (const value of ["", "abc", "1e", "1.2.3", "0x10", " 1", "NaN", "Infinity"]) {
    assert.equal(attributeValueProblem("Number", value), "is not a number", value);
  }
  for (const value of ["", "AAAA", "AA==", "AAA=", "aGVsbG8gd29ybGQ="]) {
    assert.equal(attributeValueProblem("Binary", value), null, value);
  }
  for (const value of ["A", "AA=", "A===", "AAAA=", "aGVsbG8-", "AA AA"]) {
    assert.equal(attributeValueProblem("Binary.x", value), "is not base64", value);
  }
});

Deno.test("attributeValueProblem() refuses in a String what XML 1.0 cannot carry", () => {
  for (const value of ["", "hello", "tab\there", "line\nbreak\r", "😀", "\ud7ff", "\ue000"]) {
    assert.equal(attributeValueProblem("String", value), null, JSON.stringify(value));
  }
  for (const value of ["\u0000", "a\u0008b", "\u001f", "\ud800", "x\udc00", "\ufffe", "\uffff"]) {
    assert.equal(
      attributeValueProblem("String.label", value),
      "holds a control character or a lone surrogate",
      JSON.stringify(value),
    );
  }
});

Deno.test("attributeValueProblem() agrees with btoa() on what base64 is", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      const text = btoa(String.fromCharCode(...bytes));
      return attributeValueProblem("Binary", text) === null;
    }),
  );
});

Deno.test("isBinaryType() is true for Binary and its labels only", () => {
  assert.equal(isBinaryType("Binary"), true);
  assert.equal(isBinaryType("Binary.gzip"), true);
  assert.equal(isBinaryType("String"), false);
  assert.equal(isBinaryType("Number.Binary"), false);
});

Deno.test("attributesText() stores none as null and the rest sorted by name in byte order", () => {
  assert.equal(attributesText(new Map()), null);
  const text = attributesText(
    new Map<string, Attribute>([
      ["b", { type: "String", value: "2" }],
      ["B", { type: "Number", value: "1" }],
      ["a", { type: "Binary", value: "AA==" }],
    ]),
  );
  assert.equal(
    text,
    '{"B":{"type":"Number","value":"1"},"a":{"type":"Binary","value":"AA=="},' +
      '"b":{"type":"String","value":"2"}}',
  );
  assert.deepEqual(readAttributes(null), new Map());
});

Deno.test("attributesText() keeps only type and value, and readAttributes() reads it back", () => {
  const extra = { type: "String", value: "v", note: "dropped" } as Attribute;
  assert.equal(attributesText(new Map([["k", extra]])), '{"k":{"type":"String","value":"v"}}');
  const attribute = fc.record({
    type: fc.constantFrom("String", "Number", "Binary", "String.x"),
    value: fc.string(),
  });
  // Names that start with a letter: JSON objects put integer-like names ("0", "12") first,
  // whatever order they were written in.
  const name = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_.-]{0,11}$/);
  fc.assert(
    fc.property(fc.dictionary(name, attribute), (dict) => {
      const attributes = new Map(Object.entries(dict));
      const read = readAttributes(attributesText(attributes));
      const names = [...attributes.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      assert.deepEqual([...read.keys()], names);
      for (const n of names) assert.deepEqual(read.get(n), { ...attributes.get(n) });
    }),
  );
});

Deno.test("attributesText() and readAttributes() keep names in order, integer-like ones too", () => {
  const a = (value: string) => ({ type: "String", value });
  const stored = attributesText(
    new Map([["b", a("1")], ["9", a("2")], ["A", a("3")], ["10", a("4")]]),
  );
  assert.equal(
    stored,
    '{"10":{"type":"String","value":"4"},"9":{"type":"String","value":"2"},' +
      '"A":{"type":"String","value":"3"},"b":{"type":"String","value":"1"}}',
    "not a JSON object's order, which puts 9 before 10",
  );
  assert.deepEqual([...readAttributes(stored).keys()], ["10", "9", "A", "b"]);
});
