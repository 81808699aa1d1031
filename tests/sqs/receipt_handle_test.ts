/**
 * Receipt handles: what they carry (job, queue tag, token), how a handle of another queue is
 * told apart — by its tag without tokens, by the job's stored queue with them, so a forged tag
 * gains nothing — and that a handle without a tag (version 1) still deletes its message.
 */

import assert from "node:assert/strict";
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { parseReceiptHandle, queueTag, receiptHandle } from "../../lib/sqs/receipt_handle.ts";
import { sdkError, startSqsServer } from "./sqs_fixture.ts";

/** A handle's text in base64url, as the server writes one. */
function encode(text: string): string {
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** Makes queues `a` and `b`, sends one message to `a` and receives it: its handle and URLs. */
async function receivedFromA(client: SQSClient) {
  const a = (await client.send(new CreateQueueCommand({ QueueName: "a" }))).QueueUrl!;
  const b = (await client.send(new CreateQueueCommand({ QueueName: "b" }))).QueueUrl!;
  await client.send(new SendMessageCommand({ QueueUrl: a, MessageBody: "m" }));
  const [message] = (await client.send(new ReceiveMessageCommand({ QueueUrl: a }))).Messages!;
  return { a, b, handle: message.ReceiptHandle!, id: Number(message.MessageId) };
}

Deno.test("receiptHandle() carries the job, its queue's tag and the token; parseReceiptHandle() reads them", () => {
  const handle = receiptHandle(42, "tok_EN-1", queueTag("orders"));
  assert.match(handle, /^[A-Za-z0-9_-]+$/);
  assert.deepEqual(parseReceiptHandle(handle), {
    id: 42,
    token: "tok_EN-1",
    queueTag: queueTag("orders"),
  });
  assert.equal(queueTag("orders").length, 8);
  assert.notEqual(queueTag("orders"), queueTag("orders2"));
  // A version-1 handle has no tag.
  assert.deepEqual(parseReceiptHandle(encode("1:42:tok")), {
    id: 42,
    token: "tok",
    queueTag: null,
  });
  for (
    const bad of [encode("2:xyz:42:tok"), encode("3:0000abcd:42:tok"), encode("2:0000abcd:0:t")]
  ) {
    assert.throws(() => parseReceiptHandle(bad), { code: "ReceiptHandleIsInvalid" });
  }
});

Deno.test("a receipt handle of another queue is ReceiptHandleIsInvalid, told by its tag", async () => {
  await using sqs = await startSqsServer();
  const { a, b, handle } = await receivedFromA(sqs.client);
  const error = await sdkError(
    sqs.client.send(new DeleteMessageCommand({ QueueUrl: b, ReceiptHandle: handle })),
  );
  assert.equal(error.name, "ReceiptHandleIsInvalid");
  await sqs.client.send(new DeleteMessageCommand({ QueueUrl: a, ReceiptHandle: handle }));
  assert.equal((await sqs.server.request("GET", "/v1/queues/a")).body.counts.done, 1);
});

Deno.test("with --tokens a forged queue tag gains nothing: the job's own queue is read", async () => {
  const token = "sqs-receipt-token-0123456789";
  await using sqs = await startSqsServer({
    tokens: [{ name: "admin", token, scopes: ["admin"] }],
    credentials: { accessKeyId: "admin", secretAccessKey: token },
  });
  const { b, handle } = await receivedFromA(sqs.client);
  const { id, token: lease } = parseReceiptHandle(handle);
  const forged = receiptHandle(id, lease, queueTag("b"));
  const error = await sdkError(
    sqs.client.send(new DeleteMessageCommand({ QueueUrl: b, ReceiptHandle: forged })),
  );
  assert.equal(error.name, "ReceiptHandleIsInvalid");
  assert.equal(
    (await sqs.server.request("GET", "/v1/queues/a", undefined, {
      authorization: `Bearer ${token}`,
    })).body.counts.leased,
    1,
  );
});

Deno.test("a version-1 receipt handle, without a queue tag, still deletes its message", async () => {
  await using sqs = await startSqsServer();
  const { a, b, handle } = await receivedFromA(sqs.client);
  const { id, token } = parseReceiptHandle(handle);
  const old = encode(`1:${id}:${token}`);
  const elsewhere = await sdkError(
    sqs.client.send(new DeleteMessageCommand({ QueueUrl: b, ReceiptHandle: old })),
  );
  assert.equal(elsewhere.name, "ReceiptHandleIsInvalid");
  await sqs.client.send(new DeleteMessageCommand({ QueueUrl: a, ReceiptHandle: old }));
  assert.equal((await sqs.server.request("GET", "/v1/queues/a")).body.counts.done, 1);
});
