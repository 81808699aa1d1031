/**
 * The SQS message actions through `@aws-sdk/client-sqs` (JSON protocol), whose MD5 checks
 * verify every body sent and received, on SQLite and PostgreSQL: send, receive, delete, change
 * visibility, their batches with partial failures, stale and malformed receipt handles, FIFO
 * order and deduplication, fair groups, long polling, and the two doors (SQS and tegami's own
 * HTTP API) on one queue.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { Consumer } from "sqs-consumer";
import { dropPgTestDatabaseAfterwards } from "../helpers/pg.ts";
import { pg, sdkError, startSqsServer, STORES } from "./sqs_fixture.ts";

for (const store of STORES) {
  Deno.test({
    name: `${store.name}: a message is sent, received with its attributes and deleted`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client, server } = sqs;
      const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "mail" }));
      const body = "héllo wörld 👋 <&> \r\n\t end";
      const sent = await client.send(new SendMessageCommand({ QueueUrl, MessageBody: body }));
      assert.equal(
        sent.MD5OfMessageBody,
        createHash("md5").update(new TextEncoder().encode(body)).digest("hex"),
      );
      const got = await client.send(
        new ReceiveMessageCommand({
          QueueUrl,
          MaxNumberOfMessages: 10,
          MessageSystemAttributeNames: ["All"],
        }),
      );
      assert.equal(got.Messages?.length, 1);
      const message = got.Messages![0];
      assert.equal(message.Body, body);
      assert.equal(message.MessageId, sent.MessageId);
      assert.equal(message.MD5OfBody, sent.MD5OfMessageBody);
      assert.equal(message.Attributes?.ApproximateReceiveCount, "1");
      const job = await server.request("GET", `/v1/jobs/${message.MessageId}`);
      assert.equal(job.body.payload, body);
      assert.equal(message.Attributes?.SentTimestamp, String(job.body.created_at));
      assert.equal(job.body.state, "leased");
      // Nothing more is visible while the message is in flight.
      const none = await client.send(new ReceiveMessageCommand({ QueueUrl }));
      assert.equal(none.Messages, undefined);
      await client.send(
        new DeleteMessageCommand({ QueueUrl, ReceiptHandle: message.ReceiptHandle }),
      );
      assert.equal(
        (await server.request("GET", `/v1/jobs/${message.MessageId}`)).body.state,
        "done",
      );
    },
  });

  Deno.test({
    name: `${store.name}: batches answer each entry, failures beside successes`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client } = sqs;
      const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "batch" }));
      const sent = await client.send(
        new SendMessageBatchCommand({
          QueueUrl,
          Entries: [
            { Id: "a", MessageBody: "one" },
            { Id: "b", MessageBody: "bad \u0000 char" },
            { Id: "c", MessageBody: "three", DelaySeconds: 901 },
            { Id: "d", MessageBody: "four" },
          ],
        }),
      );
      assert.deepEqual(sent.Successful?.map((e) => e.Id), ["a", "d"]);
      assert.deepEqual(
        sent.Failed?.map((e) => [e.Id, e.Code, e.SenderFault]),
        [["b", "InvalidMessageContents", true], ["c", "InvalidParameterValue", true]],
      );
      const got = await client.send(
        new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }),
      );
      assert.deepEqual(got.Messages?.map((m) => m.Body), ["one", "four"]);
      const [one, four] = got.Messages!;
      const changed = await client.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl,
          Entries: [
            { Id: "x", ReceiptHandle: one.ReceiptHandle, VisibilityTimeout: 120 },
            { Id: "y", ReceiptHandle: "not-a-handle", VisibilityTimeout: 10 },
          ],
        }),
      );
      assert.deepEqual(changed.Successful?.map((e) => e.Id), ["x"]);
      assert.deepEqual(changed.Failed?.map((e) => [e.Id, e.Code]), [[
        "y",
        "ReceiptHandleIsInvalid",
      ]]);
      const deleted = await client.send(
        new DeleteMessageBatchCommand({
          QueueUrl,
          Entries: [
            { Id: "p", ReceiptHandle: one.ReceiptHandle },
            { Id: "q", ReceiptHandle: four.ReceiptHandle },
            { Id: "r", ReceiptHandle: "%%%" },
          ],
        }),
      );
      assert.deepEqual(deleted.Successful?.map((e) => e.Id), ["p", "q"]);
      assert.deepEqual(deleted.Failed?.map((e) => [e.Id, e.Code]), [[
        "r",
        "ReceiptHandleIsInvalid",
      ]]);
      for (
        const [entries, code] of [
          [[], "EmptyBatchRequest"],
          [
            Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}`, MessageBody: "x" })),
            "TooManyEntriesInBatchRequest",
          ],
          [
            [{ Id: "s", MessageBody: "x" }, { Id: "s", MessageBody: "y" }],
            "BatchEntryIdsNotDistinct",
          ],
          [[{ Id: "bad id!", MessageBody: "x" }], "InvalidBatchEntryId"],
        ] as const
      ) {
        const error = await sdkError(
          client.send(new SendMessageBatchCommand({ QueueUrl, Entries: [...entries] })),
        );
        assert.equal(error.name, code);
      }
    },
  });

  Deno.test({
    name: `${store.name}: a stale receipt handle deletes nothing and a malformed one is refused`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client, server } = sqs;
      const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "fence" }));
      await client.send(new SendMessageCommand({ QueueUrl, MessageBody: "once" }));
      const first = (await client.send(new ReceiveMessageCommand({ QueueUrl }))).Messages![0];
      // Visible again at once: received by someone else, with a new handle.
      await client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl,
          ReceiptHandle: first.ReceiptHandle,
          VisibilityTimeout: 0,
        }),
      );
      const second = (await client.send(
        new ReceiveMessageCommand({ QueueUrl, MessageSystemAttributeNames: ["All"] }),
      )).Messages![0];
      assert.equal(second.MessageId, first.MessageId);
      assert.notEqual(second.ReceiptHandle, first.ReceiptHandle);
      assert.equal(second.Attributes?.ApproximateReceiveCount, "2");
      // The first consumer's late delete succeeds, as AWS answers, and deletes nothing.
      await client.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: first.ReceiptHandle }));
      assert.equal(
        (await server.request("GET", `/v1/jobs/${first.MessageId}`)).body.state,
        "leased",
      );
      const stale = await sdkError(
        client.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl,
            ReceiptHandle: first.ReceiptHandle,
            VisibilityTimeout: 30,
          }),
        ),
      );
      assert.equal(stale.name, "InvalidParameterValue");
      await client.send(
        new DeleteMessageCommand({ QueueUrl, ReceiptHandle: second.ReceiptHandle }),
      );
      assert.equal((await server.request("GET", `/v1/jobs/${first.MessageId}`)).body.state, "done");
      const notInFlight = await sdkError(
        client.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl,
            ReceiptHandle: second.ReceiptHandle,
            VisibilityTimeout: 30,
          }),
        ),
      );
      assert.equal(notInFlight.name, "MessageNotInflight");
      for (const handle of ["garbage", "MTox", "", "A".repeat(2000)]) {
        const error = await sdkError(
          client.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: handle })),
        );
        assert.ok(
          ["ReceiptHandleIsInvalid", "MissingParameter"].includes(error.name),
          `${handle.slice(0, 10)}: ${error.name}`,
        );
        assert.equal(error.status, 400);
      }
    },
  });

  Deno.test({
    name: `${store.name}: a FIFO queue keeps order within a group and deduplicates`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client } = sqs;
      const { QueueUrl } = await client.send(
        new CreateQueueCommand({ QueueName: "jobs.fifo", Attributes: { FifoQueue: "true" } }),
      );
      const ids: string[] = [];
      for (const [group, body] of [["a", "a1"], ["b", "b1"], ["a", "a2"], ["b", "b2"]]) {
        const sent = await client.send(
          new SendMessageCommand({ QueueUrl, MessageBody: body, MessageGroupId: group }),
        );
        assert.match(sent.SequenceNumber ?? "", /^[0-9]{20}$/);
        ids.push(sent.MessageId!);
      }
      // Same body, no id: content-based deduplication answers the first message's id.
      const again = await client.send(
        new SendMessageCommand({ QueueUrl, MessageBody: "a1", MessageGroupId: "a" }),
      );
      assert.equal(again.MessageId, ids[0]);
      const byId1 = await client.send(
        new SendMessageCommand({
          QueueUrl,
          MessageBody: "c1",
          MessageGroupId: "c",
          MessageDeduplicationId: "order-7",
        }),
      );
      const byId2 = await client.send(
        new SendMessageCommand({
          QueueUrl,
          MessageBody: "c1 other body",
          MessageGroupId: "c",
          MessageDeduplicationId: "order-7",
        }),
      );
      assert.equal(byId2.MessageId, byId1.MessageId);
      const missing = await sdkError(
        client.send(new SendMessageCommand({ QueueUrl, MessageBody: "x" })),
      );
      assert.equal(missing.name, "MissingParameter");
      // One in flight per group: the first of each group, in order.
      const first = await client.send(
        new ReceiveMessageCommand({
          QueueUrl,
          MaxNumberOfMessages: 10,
          MessageSystemAttributeNames: ["All"],
        }),
      );
      assert.deepEqual(first.Messages?.map((m) => m.Body).sort(), ["a1", "b1", "c1"]);
      const a1 = first.Messages!.find((m) => m.Body === "a1")!;
      assert.equal(a1.Attributes?.MessageGroupId, "a");
      assert.equal(a1.Attributes?.MessageDeduplicationId?.length, 64);
      assert.equal(
        (await client.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 })))
          .Messages,
        undefined,
      );
      await client.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: a1.ReceiptHandle }));
      const next = await client.send(
        new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }),
      );
      assert.deepEqual(next.Messages?.map((m) => m.Body), ["a2"]);
    },
  });

  Deno.test({
    name: `${store.name}: one queue, two doors: SQS and tegami's HTTP API share its jobs`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client, server } = sqs;
      const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "doors" }));
      // In through SQS, out through tegami: the payload is the body as a JSON string.
      await client.send(new SendMessageCommand({ QueueUrl, MessageBody: '{"not":"parsed"}' }));
      const leased = await server.request("POST", "/v1/queues/doors/leases", { max: 10 });
      assert.equal(leased.body.jobs.length, 1);
      assert.equal(leased.body.jobs[0].payload, '{"not":"parsed"}');
      const job = leased.body.jobs[0];
      const ack = await server.request("POST", `/v1/jobs/${job.id}/ack`, {
        token: job.lease.token,
      });
      assert.equal(ack.status, 200);
      // In through tegami with a JSON object, out through SQS as its JSON text, MD5 checked.
      await server.request("POST", "/v1/queues/doors/jobs", { payload: { n: 1, s: "é" } });
      await server.request("POST", "/v1/queues/doors/jobs", { payload: "plain text" });
      const got = await client.send(
        new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }),
      );
      assert.deepEqual(got.Messages?.map((m) => m.Body), ['{"n":1,"s":"é"}', "plain text"]);
    },
  });
}

Deno.test("a standard queue with message groups serves the groups in turn", async () => {
  await using sqs = await startSqsServer();
  const { client } = sqs;
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "fair" }));
  for (let i = 0; i < 4; i++) {
    await client.send(
      new SendMessageCommand({ QueueUrl, MessageBody: `big${i}`, MessageGroupId: "big" }),
    );
  }
  await client.send(
    new SendMessageCommand({ QueueUrl, MessageBody: "small0", MessageGroupId: "small" }),
  );
  const got = await client.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 2 }));
  // The small group's message is not stuck behind the big group's backlog.
  assert.deepEqual(got.Messages?.map((m) => m.Body), ["big0", "small0"]);
  // Unlike FIFO, a group may have several messages in flight.
  const more = await client.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }));
  assert.deepEqual(more.Messages?.map((m) => m.Body), ["big1", "big2", "big3"]);
});

Deno.test("ReceiveMessage long-polls until a message comes, and answers empty after its wait", async () => {
  await using sqs = await startSqsServer();
  const { client } = sqs;
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "poll" }));
  const started = Date.now();
  const empty = await client.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
  assert.equal(empty.Messages, undefined);
  assert.ok(Date.now() - started >= 900, `waited ${Date.now() - started} ms`);
  const waiting = client.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 20 }));
  await new Promise((resolve) => setTimeout(resolve, 100));
  const sentAt = Date.now();
  await client.send(new SendMessageCommand({ QueueUrl, MessageBody: "late" }));
  const got = await waiting;
  assert.equal(got.Messages?.[0].Body, "late");
  assert.ok(Date.now() - sentAt < 1000);
  for (
    const [input, name] of [
      [{ MaxNumberOfMessages: 11 }, "MaxNumberOfMessages"],
      [{ MaxNumberOfMessages: 0 }, "MaxNumberOfMessages"],
      [{ WaitTimeSeconds: 21 }, "WaitTimeSeconds"],
      [{ VisibilityTimeout: 43201 }, "VisibilityTimeout"],
    ] as const
  ) {
    const error = await sdkError(client.send(new ReceiveMessageCommand({ QueueUrl, ...input })));
    assert.equal(error.name, "InvalidParameterValue");
    assert.match(error.message, new RegExp(name));
  }
});

for (const store of STORES) {
  Deno.test({
    name: `${store.name}: message attributes are stored with the job and given back, MD5s and all`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client, server } = sqs;
      const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "attrs" }));
      const png = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0, 255);
      // The SDK checks MD5OfMessageAttributes against what it sent, and on receipt against what
      // came back: a digest computed differently fails these calls.
      const sent = await client.send(
        new SendMessageCommand({
          QueueUrl,
          MessageBody: "with attributes",
          MessageAttributes: {
            "trace.id": { DataType: "String", StringValue: "00-ab-cd-01" },
            "trace.sampled": { DataType: "Number.bool", StringValue: "1" },
            thumbnail: { DataType: "Binary", BinaryValue: png },
          },
        }),
      );
      assert.match(sent.MD5OfMessageAttributes ?? "", /^[0-9a-f]{32}$/);
      const job = await server.request("GET", `/v1/jobs/${sent.MessageId}`);
      assert.deepEqual(job.body.attributes, {
        thumbnail: { type: "Binary", value: "iVBORwD/" },
        "trace.id": { type: "String", value: "00-ab-cd-01" },
        "trace.sampled": { type: "Number.bool", value: "1" },
      });
      const [all] = (await client.send(
        new ReceiveMessageCommand({ QueueUrl, MessageAttributeNames: ["All"] }),
      )).Messages!;
      assert.equal(all.MD5OfMessageAttributes, sent.MD5OfMessageAttributes);
      assert.deepEqual(all.MessageAttributes?.thumbnail.BinaryValue, png);
      assert.equal(all.MessageAttributes?.["trace.id"].StringValue, "00-ab-cd-01");
      await client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl,
          ReceiptHandle: all.ReceiptHandle,
          VisibilityTimeout: 0,
        }),
      );
      const [some] = (await client.send(
        new ReceiveMessageCommand({ QueueUrl, MessageAttributeNames: ["trace.*"] }),
      )).Messages!;
      assert.deepEqual(Object.keys(some.MessageAttributes ?? {}).sort(), [
        "trace.id",
        "trace.sampled",
      ]);
      assert.notEqual(some.MD5OfMessageAttributes, sent.MD5OfMessageAttributes, "of the subset");
      await client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl,
          ReceiptHandle: some.ReceiptHandle,
          VisibilityTimeout: 0,
        }),
      );
      const [none] = (await client.send(new ReceiveMessageCommand({ QueueUrl }))).Messages!;
      assert.equal(none.MessageAttributes, undefined, "none asked for, none given");
      // The other door: a job enqueued with attributes through tegami's API.
      const made = await server.request("POST", "/v1/queues/attrs2/jobs", {
        payload: "native",
        attributes: { kind: { type: "String", value: "invoice" } },
      });
      const url2 = QueueUrl!.replace(/attrs$/, "attrs2");
      const [native] = (await client.send(
        new ReceiveMessageCommand({ QueueUrl: url2, MessageAttributeNames: ["kind"] }),
      )).Messages!;
      assert.equal(native.MessageId, String(made.body.id));
      assert.deepEqual(native.MessageAttributes, {
        kind: { DataType: "String", StringValue: "invoice" },
      });
    },
  });
}

Deno.test("SendMessage refuses bad message attributes with AWS's errors", async () => {
  await using sqs = await startSqsServer();
  const { client } = sqs;
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "attrs" }));
  const send = (MessageAttributes: Record<string, unknown>) =>
    sdkError(
      client.send(
        // deno-lint-ignore no-explicit-any
        new SendMessageCommand({ QueueUrl, MessageBody: "x", MessageAttributes } as any),
      ),
    );
  const cases: Record<string, unknown>[] = [
    { n: { DataType: "Number", StringValue: "not a number" } },
    { "AWS.x": { DataType: "String", StringValue: "a" } },
    { s: { DataType: "String", StringValue: "bell\u0007" } },
    { big: { DataType: "String", StringValue: "x".repeat(5000) } },
    Object.fromEntries(
      Array.from({ length: 11 }, (_, i) => [`a${i}`, { DataType: "String", StringValue: "x" }]),
    ),
  ];
  for (const attributes of cases) {
    const refused = await send(attributes);
    assert.equal(refused.name, "InvalidParameterValue", JSON.stringify(attributes).slice(0, 80));
  }
  const fifoOnly = await sdkError(
    client.send(
      new SendMessageCommand({ QueueUrl, MessageBody: "x", MessageDeduplicationId: "d" }),
    ),
  );
  assert.equal(fifoOnly.name, "InvalidParameterValue");
  const empty = await sdkError(client.send(new SendMessageCommand({ QueueUrl, MessageBody: "" })));
  assert.equal(empty.name, "MissingParameter");
});

Deno.test("sqs-consumer consumes messages and deletes them as it handles them", async () => {
  await using sqs = await startSqsServer();
  const { client, server } = sqs;
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "consumed" }));
  for (let i = 0; i < 5; i++) {
    await client.send(new SendMessageCommand({ QueueUrl, MessageBody: `job ${i}` }));
  }
  const bodies: string[] = [];
  const { promise: allHandled, resolve } = Promise.withResolvers<void>();
  const consumer = Consumer.create({
    queueUrl: QueueUrl!,
    sqs: client,
    waitTimeSeconds: 1,
    batchSize: 10,
    handleMessage: (message) => {
      bodies.push(message.Body!);
      if (bodies.length === 5) resolve();
      return Promise.resolve(message);
    },
  });
  consumer.start();
  await allHandled;
  let done = 0;
  for (let i = 0; i < 100 && done < 5; i++) {
    await new Promise((r) => setTimeout(r, 20));
    done = (await server.request("GET", "/v1/queues/consumed")).body.counts.done;
  }
  const { promise: stopped, resolve: onStopped } = Promise.withResolvers<void>();
  consumer.on("stopped", () => onStopped());
  consumer.stop({ abort: true });
  await stopped;
  assert.deepEqual(bodies.sort(), ["job 0", "job 1", "job 2", "job 3", "job 4"]);
  assert.equal(done, 5, "the consumer's deletes did not land");
});

dropPgTestDatabaseAfterwards(pg);
