/**
 * The span scanner against JSON.parse: for any JSON, written compactly, indented or with odd
 * spacing and duplicate keys, the text it points at parses to what JSON.parse made of it.
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { elementSpans, memberSpan } from "../../lib/api/json_spans.ts";

const spaced = (value: unknown, indent: number) => JSON.stringify(value, null, indent);

Deno.test("memberSpan() finds each member's text, formatted any way", () => {
  fc.assert(
    fc.property(
      fc.dictionary(fc.string(), fc.jsonValue()),
      fc.string(),
      fc.integer({ min: 0, max: 4 }),
      (object, absent, indent) => {
        const text = spaced(object, indent);
        const parsed = JSON.parse(text);
        for (const key of Object.keys(parsed)) {
          const span = memberSpan(text, key)!;
          assert.deepEqual(JSON.parse(text.slice(span.start, span.end)), parsed[key]);
        }
        if (!Object.hasOwn(parsed, absent)) assert.equal(memberSpan(text, absent), undefined);
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("elementSpans() finds each element's text", () => {
  fc.assert(
    fc.property(fc.array(fc.jsonValue()), fc.integer({ min: 0, max: 3 }), (array, indent) => {
      const text = ` ${spaced(array, indent)} `;
      const spans = elementSpans(text)!;
      assert.equal(spans.length, array.length);
      spans.forEach((span, i) => {
        assert.deepEqual(JSON.parse(text.slice(span.start, span.end)), JSON.parse(text)[i]);
      });
    }),
    { numRuns: 300 },
  );
});

Deno.test("memberSpan() takes the last of duplicate keys, as JSON.parse does, escaped keys too", () => {
  const text = '{ "payload" : 1 , "p\\u0061yload":\t[2, "}]"] ,"x":{"payload":3}}';
  const span = memberSpan(text, "payload")!;
  assert.equal(text.slice(span.start, span.end), '[2, "}]"]');
  assert.deepEqual(JSON.parse(text).payload, [2, "}]"]);
});

Deno.test("spans keep the text as written: big integers, 1.0, escapes, spacing", () => {
  const payload = '{"id": 12345678901234567890, "ratio": 1.0, "s": "a\\"b\\\\", "e": 1E+2}';
  const text = `{"priority":1,"payload":${payload} }`;
  const span = memberSpan(text, "payload")!;
  assert.equal(text.slice(span.start, span.end), payload);
});

Deno.test("memberSpan() and elementSpans() answer nothing where no object or array starts", () => {
  assert.equal(memberSpan("[1]", "a"), undefined);
  assert.equal(memberSpan(" {} ", "a"), undefined);
  assert.equal(elementSpans('{"a":1}'), null);
  assert.deepEqual(elementSpans("[ ]"), []);
});
