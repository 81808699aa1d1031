/**
 * Fuzzing both SQS parsers against a real server (DESIGN §8: 0 5xx on malformed input): JSON
 * bodies of every action's member names with values of every type, and query forms of flattened
 * names with odd indexes, each with and without a SigV4-shaped header. Every answer must be a
 * well-formed error or success of its protocol, never a 5xx, and a seeded message must come out
 * intact afterwards.
 *
 * Deterministic: fixed seeds and bounded runs (`FUZZ_RUNS`, `FUZZ_SEED` as for the HTTP fuzz).
 */

import fc from "fast-check";
import assert from "node:assert/strict";
import { fuzzParams, jsonText, stringLiteral } from "../helpers/fuzz.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { ACTIONS } from "../../lib/sqs/shapes.ts";

const SIGNED = {
  authorization: "AWS4-HMAC-SHA256 Credential=fuzz/20240101/us-east-1/sqs/aws4_request, " +
    `SignedHeaders=host;x-amz-date, Signature=${"0".repeat(64)}`,
  "x-amz-date": "20240101T000000Z",
};

const MEMBERS = [
  "QueueName",
  "QueueUrl",
  "Attributes",
  "AttributeNames",
  "MessageBody",
  "DelaySeconds",
  "MessageAttributes",
  "MessageGroupId",
  "MessageDeduplicationId",
  "Entries",
  "MaxNumberOfMessages",
  "WaitTimeSeconds",
  "VisibilityTimeout",
  "ReceiptHandle",
  "MaxResults",
  "NextToken",
  "tags",
];
const QUERY_NAMES = [
  "Action",
  "Version",
  "QueueName",
  "QueueUrl",
  "MessageBody",
  "Attribute.1.Name",
  "Attribute.1.Value",
  "Attribute.2.Value",
  "AttributeName.1",
  "AttributeName.1000",
  "MessageAttribute.1.Name",
  "MessageAttribute.1.Value.DataType",
  "MessageAttribute.1.Value.StringValue",
  "MessageAttribute.1.Value.BinaryValue",
  "SendMessageBatchRequestEntry.1.Id",
  "SendMessageBatchRequestEntry.1.MessageBody",
  "SendMessageBatchRequestEntry.2.Id",
  "DeleteMessageBatchRequestEntry.1.ReceiptHandle",
  "MaxNumberOfMessages",
  "VisibilityTimeout",
  "ReceiptHandle",
  "__proto__",
  "Tag.1.Key",
];

const action = fc.oneof(fc.constantFrom(...ACTIONS, "TagQueue"), fc.string({ maxLength: 20 }));
const queueUrl = fc.constantFrom(
  "http://x/000000000000/fz",
  "http://x/000000000000/fz.fifo",
  "http://x/1/fz",
  "nonsense",
  "",
);
const value = fc.oneof(
  jsonText,
  stringLiteral,
  queueUrl.map((u) => JSON.stringify(u)),
  fc.constantFrom("0", "11", "-1", "1e400", "true", "null", "[]", "{}", '{"a":"b"}'),
);
const jsonBody = fc.oneof(
  fc.dictionary(fc.constantFrom(...MEMBERS), value, { maxKeys: 5 }).map((members) =>
    `{${Object.entries(members).map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`
  ),
  jsonText,
  fc.string({ maxLength: 50 }),
);
const queryBody = fc.array(
  fc.tuple(
    fc.oneof(fc.constantFrom(...QUERY_NAMES), fc.string({ maxLength: 12 })),
    fc.oneof(action, queueUrl, fc.string({ maxLength: 30 }), fc.constantFrom("1", "x", "%zz")),
  ),
  { maxLength: 8 },
).map((pairs) =>
  pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")
);

Deno.test("the SQS parsers answer malformed input with errors of their protocol, never a 5xx", async () => {
  await using server = await startTestServer({ realTime: true, config: { maxBody: 64 * 1024 } });
  const seeded = await server.request("POST", "/v1/queues/fz/jobs", { payload: "keep me" });
  const seen = new Map<number, number>();
  const check = async (
    protocol: "json" | "query",
    target: string,
    body: string,
    signed: boolean,
  ) => {
    const headers: Record<string, string> = protocol === "json"
      ? { "content-type": "application/x-amz-json-1.0", "x-amz-target": `AmazonSQS.${target}` }
      : { "content-type": "application/x-www-form-urlencoded" };
    if (signed) Object.assign(headers, SIGNED);
    const response = await fetch(server.url + "/", { method: "POST", headers, body });
    const text = await response.text();
    seen.set(response.status, (seen.get(response.status) ?? 0) + 1);
    assert.ok(response.status < 500, `${response.status} ${text}`);
    if (protocol === "json") {
      const answer = JSON.parse(text);
      if (response.status >= 400) assert.match(answer.__type, /^com\.amazonaws\.sqs#\w+$/);
    } else if (response.status >= 400) {
      assert.match(
        text,
        /^<\?xml version="1.0"\?><ErrorResponse [^>]*><Error><Type>Sender<\/Type>/,
      );
    } else {
      assert.match(text, /<ResponseMetadata><RequestId>[0-9a-f-]{36}<\/RequestId>/);
    }
  };
  await fc.assert(
    fc.asyncProperty(
      action,
      jsonBody,
      fc.boolean(),
      (target, body, signed) => check("json", target, body, signed),
    ),
    fuzzParams(300, 4040),
  );
  await fc.assert(
    fc.asyncProperty(queryBody, fc.boolean(), (body, signed) => check("query", "", body, signed)),
    fuzzParams(300, 4041),
  );
  // Whatever the generated cases hit, a well-formed call of each protocol passes the same check.
  await check("json", "ListQueues", "{}", true);
  await check("query", "", "Action=ListQueues&Version=2012-11-05", true);
  assert.ok((seen.get(200) ?? 0) > 0 && (seen.get(400) ?? 0) > 0, JSON.stringify([...seen]));
  const job = await server.request("GET", `/v1/jobs/${seeded.body.id}`);
  assert.equal(job.body.payload, "keep me");
});
