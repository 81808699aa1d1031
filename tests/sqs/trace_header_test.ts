/**
 * `AWSTraceHeader` through `@aws-sdk/client-sqs` (JSON protocol) and Debian's boto3 (query
 * protocol): stored as the job's `traceparent`, answered to a receive that asks for it (whichever
 * door the job came through), `MD5OfMessageSystemAttributes` as AWS computes it, and a header
 * tegami cannot keep refused alone in a batch.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  CreateQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { startTestServer } from "../helpers/test_server.ts";
import { sdkError, startSqsServer } from "./sqs_fixture.ts";

/** Debian's Python, which holds python3-boto3 (another `python3` on PATH may hold another). */
const PYTHON = "/usr/bin/python3";
// CI installs python3-boto3 (.ci/run), so there a missing boto3 fails the test instead.
const boto3 = new Deno.Command(PYTHON, { args: ["-c", "import boto3"] }).outputSync().success ||
  Deno.env.get("CI") === "true";
if (!boto3) console.warn(`Skipping the boto3 trace header test: ${PYTHON} cannot import boto3`);

const XRAY = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
const TRACEPARENT = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01";

/**
 * AWS's digest of system attributes, written out here apart from lib/sqs/message_md5.ts: for
 * each (sorted by name) the name, the data type, transport byte 1 and the string value, each
 * text preceded by its UTF-8 length as a 4-byte big-endian integer.
 */
function systemAttributesMd5(attributes: Record<string, string>): string {
  const hash = createHash("md5");
  const text = (s: string) => {
    const bytes = Buffer.from(s, "utf8");
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    hash.update(length);
    hash.update(bytes);
  };
  for (const name of Object.keys(attributes).sort()) {
    text(name);
    text("String");
    hash.update(Buffer.from([1]));
    text(attributes[name]);
  }
  return hash.digest("hex");
}

function traceHeader(value: string, dataType = "String") {
  return { AWSTraceHeader: { DataType: dataType, StringValue: value } };
}

Deno.test("SendMessage stores AWSTraceHeader as the job's traceparent, and a receive gives it back", async () => {
  await using sqs = await startSqsServer();
  const { client, server } = sqs;
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "traced" }));
  const lineage = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;" +
    "Sampled=1;Lineage=a87bd80c:1|68fd508a:5";
  const sent = await client.send(
    new SendMessageCommand({
      QueueUrl,
      MessageBody: "hello",
      MessageSystemAttributes: traceHeader(lineage),
    }),
  );
  assert.equal(
    sent.MD5OfMessageSystemAttributes,
    systemAttributesMd5({ AWSTraceHeader: lineage }),
  );
  assert.equal(sent.MD5OfMessageAttributes, undefined);
  const job = await server.request("GET", `/v1/jobs/${sent.MessageId}`);
  assert.deepEqual(job.body.attributes, { traceparent: { type: "String", value: TRACEPARENT } });
  const got = await client.send(
    new ReceiveMessageCommand({ QueueUrl, MessageSystemAttributeNames: ["AWSTraceHeader"] }),
  );
  // The header is rebuilt from the traceparent: Root, Parent and Sampled, in that order.
  assert.deepEqual(got.Messages![0].Attributes, { AWSTraceHeader: XRAY });
});

Deno.test("ReceiveMessage answers AWSTraceHeader for a job enqueued with a traceparent header", async () => {
  await using sqs = await startSqsServer();
  const { client, server } = sqs;
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "mixed" }));
  await server.request("POST", "/v1/queues/mixed/jobs", { payload: "a" }, {
    traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
  });
  await server.request("POST", "/v1/queues/mixed/jobs", { payload: "b" });
  const got = await client.send(
    new ReceiveMessageCommand({
      QueueUrl,
      MaxNumberOfMessages: 10,
      MessageSystemAttributeNames: ["All"],
      MessageAttributeNames: ["All"],
    }),
  );
  assert.equal(got.Messages?.length, 2);
  const [a, b] = got.Messages!;
  assert.equal(
    a.Attributes?.AWSTraceHeader,
    "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=0",
  );
  assert.equal(
    a.MessageAttributes?.traceparent?.StringValue,
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
  );
  assert.equal(b.Attributes?.AWSTraceHeader, undefined);
  const unasked = await client.send(new ReceiveMessageCommand({ QueueUrl }));
  assert.equal(unasked.Messages, undefined);
});

Deno.test("SendMessage keeps a message's own traceparent attribute over AWSTraceHeader", async () => {
  await using sqs = await startSqsServer();
  const { client, server } = sqs;
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "own" }));
  const own = "00-11111111111111111111111111111111-2222222222222222-01";
  const sent = await client.send(
    new SendMessageCommand({
      QueueUrl,
      MessageBody: "x",
      MessageAttributes: { traceparent: { DataType: "String", StringValue: own } },
      MessageSystemAttributes: traceHeader(XRAY),
    }),
  );
  const job = await server.request("GET", `/v1/jobs/${sent.MessageId}`);
  assert.deepEqual(job.body.attributes, { traceparent: { type: "String", value: own } });
  assert.equal(sent.MD5OfMessageSystemAttributes, systemAttributesMd5({ AWSTraceHeader: XRAY }));
});

Deno.test("SendMessage refuses AWSTraceHeader beside 10 message attributes, and takes it beside nine", async () => {
  await using sqs = await startSqsServer();
  const { client, server } = sqs;
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "ten" }));
  const attributes = (n: number) =>
    Object.fromEntries(
      Array.from({ length: n }, (_, i) => [`a${i}`, { DataType: "String", StringValue: "x" }]),
    );
  const error = await sdkError(
    client.send(
      new SendMessageCommand({
        QueueUrl,
        MessageBody: "x",
        MessageAttributes: attributes(10),
        MessageSystemAttributes: traceHeader(XRAY),
      }),
    ),
  );
  assert.equal(error.name, "InvalidParameterValue");
  assert.match(error.message, /send at most 9 message attributes with it/);
  const sent = await client.send(
    new SendMessageCommand({
      QueueUrl,
      MessageBody: "x",
      MessageAttributes: attributes(9),
      MessageSystemAttributes: traceHeader(XRAY),
    }),
  );
  const job = await server.request("GET", `/v1/jobs/${sent.MessageId}`);
  assert.equal(Object.keys(job.body.attributes).length, 10);
  assert.equal(job.body.attributes.traceparent.value, TRACEPARENT);
  assert.equal(
    sent.MD5OfMessageAttributes,
    systemAttributesMd5(
      Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`a${i}`, "x"])),
    ),
    "the message attributes' digest is over those sent",
  );
});

Deno.test("SendMessageBatch answers each entry's system attributes digest, a bad header failing alone", async () => {
  await using sqs = await startSqsServer();
  const { client } = sqs;
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "batch" }));
  const other = "Root=1-00000001-000000000000000000000002;Parent=0000000000000003;Sampled=0";
  const answer = await client.send(
    new SendMessageBatchCommand({
      QueueUrl,
      Entries: [
        { Id: "a", MessageBody: "a", MessageSystemAttributes: traceHeader(XRAY) },
        { Id: "b", MessageBody: "b" },
        { Id: "c", MessageBody: "c", MessageSystemAttributes: traceHeader(other) },
        { Id: "d", MessageBody: "d", MessageSystemAttributes: traceHeader("Root=1-5759e988-x") },
        { Id: "e", MessageBody: "e", MessageSystemAttributes: traceHeader(XRAY, "Number") },
      ],
    }),
  );
  const byId = new Map(answer.Successful!.map((s) => [s.Id, s]));
  assert.equal(
    byId.get("a")!.MD5OfMessageSystemAttributes,
    systemAttributesMd5({ AWSTraceHeader: XRAY }),
  );
  assert.equal(byId.get("b")!.MD5OfMessageSystemAttributes, undefined);
  assert.equal(
    byId.get("c")!.MD5OfMessageSystemAttributes,
    systemAttributesMd5({ AWSTraceHeader: other }),
  );
  assert.deepEqual(
    answer.Failed!.map((f) => [f.Id, f.Code, f.SenderFault]),
    [["d", "InvalidParameterValue", true], ["e", "InvalidParameterValue", true]],
  );
  assert.match(answer.Failed![0].Message!, /X-Ray trace header with a Root and a Parent/);
  assert.match(answer.Failed![1].Message!, /must be of type String/);
  const got = await client.send(
    new ReceiveMessageCommand({
      QueueUrl,
      MaxNumberOfMessages: 10,
      MessageSystemAttributeNames: ["AWSTraceHeader"],
    }),
  );
  assert.deepEqual(
    got.Messages!.map((m) => [m.Body, m.Attributes?.AWSTraceHeader]),
    [["a", XRAY], ["b", undefined], ["c", other]],
  );
});

Deno.test("SendMessage refuses a system attribute other than AWSTraceHeader", async () => {
  await using sqs = await startSqsServer();
  const { client } = sqs;
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "refused" }));
  const error = await sdkError(
    client.send(
      new SendMessageCommand({
        QueueUrl,
        MessageBody: "x",
        // Not in the SDK's types, which name AWSTraceHeader alone: sent as the wire carries it.
        MessageSystemAttributes: { SenderId: { DataType: "String", StringValue: "me" } } as Record<
          string,
          { DataType: string; StringValue: string }
        >,
      }),
    ),
  );
  assert.equal(error.name, "InvalidParameterValue");
  assert.match(error.message, /Message system attribute name 'SenderId' is invalid/);
});

Deno.test({
  name: "boto3 (query protocol) sends and receives AWSTraceHeader, digest checked",
  ignore: !boto3,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const script = new URL("./boto3_trace.py", import.meta.url).pathname;
    const out = await new Deno.Command(PYTHON, { args: [script, server.url] }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.ok(out.success && text.trim().endsWith("ok"), text);
  },
});
