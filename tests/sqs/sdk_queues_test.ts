/**
 * The SQS queue actions through `@aws-sdk/client-sqs` (JSON protocol), on SQLite and on
 * PostgreSQL: CreateQueue, GetQueueUrl, ListQueues, Get/SetQueueAttributes, PurgeQueue,
 * DeleteQueue, and the errors AWS answers for them.
 */

import assert from "node:assert/strict";
import {
  CancelMessageMoveTaskCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListDeadLetterSourceQueuesCommand,
  ListMessageMoveTasksCommand,
  ListQueuesCommand,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  StartMessageMoveTaskCommand,
} from "@aws-sdk/client-sqs";
import { dropPgTestDatabaseAfterwards } from "../helpers/pg.ts";
import { pg, sdkError, startSqsServer, STORES } from "./sqs_fixture.ts";

for (const store of STORES) {
  Deno.test({
    name: `${store.name}: CreateQueue, GetQueueUrl and ListQueues name queues by URL`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client, server } = sqs;
      const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "orders" }));
      assert.equal(QueueUrl, `${server.url}/000000000000/orders`);
      // Creating it again with the same attributes answers the same URL.
      assert.equal(
        (await client.send(new CreateQueueCommand({ QueueName: "orders" }))).QueueUrl,
        QueueUrl,
      );
      assert.equal(
        (await client.send(new GetQueueUrlCommand({ QueueName: "orders" }))).QueueUrl,
        QueueUrl,
      );
      for (const name of ["orders-eu", "orders-us", "billing"]) {
        await client.send(new CreateQueueCommand({ QueueName: name }));
      }
      const all = await client.send(new ListQueuesCommand({}));
      assert.deepEqual(all.QueueUrls?.map((u) => u.split("/").pop()), [
        "billing",
        "orders",
        "orders-eu",
        "orders-us",
      ]);
      assert.equal(all.NextToken, undefined);
      const prefixed = await client.send(new ListQueuesCommand({ QueueNamePrefix: "orders-" }));
      assert.deepEqual(prefixed.QueueUrls?.map((u) => u.split("/").pop()), [
        "orders-eu",
        "orders-us",
      ]);
      // Paging: MaxResults a page at a time, NextToken the cursor.
      const seen: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(new ListQueuesCommand({ MaxResults: 3, NextToken: token }));
        seen.push(...page.QueueUrls!.map((u) => u.split("/").pop()!));
        token = page.NextToken;
      } while (token !== undefined);
      assert.deepEqual(seen, ["billing", "orders", "orders-eu", "orders-us"]);
      const missing = await sdkError(client.send(new GetQueueUrlCommand({ QueueName: "nope" })));
      assert.equal(missing.name, "QueueDoesNotExist");
      assert.equal(missing.status, 400);
    },
  });

  Deno.test({
    name: `${store.name}: queue attributes map onto the queue's settings and counts`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client, server } = sqs;
      const { QueueUrl } = await client.send(
        new CreateQueueCommand({
          QueueName: "attrs",
          Attributes: { VisibilityTimeout: "45", RedrivePolicy: '{"maxReceiveCount":3}' },
        }),
      );
      const settings = await server.request("GET", "/v1/queues/attrs/settings");
      assert.equal(settings.body.lease_ms, 45_000);
      assert.equal(settings.body.max_attempts, 3);
      await client.send(new SendMessageCommand({ QueueUrl, MessageBody: "a" }));
      await client.send(new SendMessageCommand({ QueueUrl, MessageBody: "b" }));
      await client.send(new SendMessageCommand({ QueueUrl, MessageBody: "c", DelaySeconds: 60 }));
      await client.send(new ReceiveMessageCommand({ QueueUrl }));
      const { Attributes } = await client.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["All"] }),
      );
      assert.equal(Attributes?.QueueArn, "arn:aws:sqs:us-east-1:000000000000:attrs");
      assert.equal(Attributes?.VisibilityTimeout, "45");
      assert.equal(Attributes?.RedrivePolicy, '{"maxReceiveCount":3}');
      assert.equal(Attributes?.ApproximateNumberOfMessages, "1");
      assert.equal(Attributes?.ApproximateNumberOfMessagesNotVisible, "1");
      assert.equal(Attributes?.ApproximateNumberOfMessagesDelayed, "1");
      assert.equal(Attributes?.FifoQueue, undefined);
      const some = await client.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["VisibilityTimeout"] }),
      );
      assert.deepEqual(some.Attributes, { VisibilityTimeout: "45" });

      await client.send(
        new SetQueueAttributesCommand({
          QueueUrl,
          Attributes: { VisibilityTimeout: "5", RedrivePolicy: "" },
        }),
      );
      const after = await server.request("GET", "/v1/queues/attrs/settings");
      assert.equal(after.body.lease_ms, 5000);
      assert.equal(after.body.max_attempts, 1000);
      assert.equal(after.body.retain_pending_ms, 345_600_000, "AWS's 4 days, from CreateQueue");
      await client.send(
        new SetQueueAttributesCommand({
          QueueUrl,
          Attributes: { MessageRetentionPeriod: "1209600" },
        }),
      );
      const retention = await client.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["MessageRetentionPeriod"] }),
      );
      assert.deepEqual(retention.Attributes, { MessageRetentionPeriod: "1209600" });
      assert.equal(
        (await server.request("GET", "/v1/queues/attrs/settings")).body.retain_pending_ms,
        1_209_600_000,
      );
      // What tegami cannot keep is refused, naming it, never accepted and forgotten.
      for (
        const [name, value, code] of [
          ["MessageRetentionPeriod", "59", "InvalidAttributeValue"],
          ["MessageRetentionPeriod", "1209601", "InvalidAttributeValue"],
          ["DelaySeconds", "901", "InvalidAttributeValue"],
          ["ReceiveMessageWaitTimeSeconds", "21", "InvalidAttributeValue"],
          ["MaximumMessageSize", "1023", "InvalidAttributeValue"],
          ["MaximumMessageSize", String(1024 * 1024 + 1), "InvalidAttributeValue"],
          ["KmsDataKeyReusePeriodSeconds", "59", "InvalidAttributeValue"],
          ["SqsManagedSseEnabled", "yes", "InvalidAttributeValue"],
          ["Policy", "not json", "InvalidAttributeValue"],
          ["RedriveAllowPolicy", '{"redrivePermission":"byQueue"}', "InvalidAttributeValue"],
          ["RedriveAllowPolicy", '{"redrivePermission":"some"}', "InvalidAttributeValue"],
          [
            "RedrivePolicy",
            '{"maxReceiveCount":2,"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:000000000000:dlq"}',
            "InvalidAttributeValue",
          ],
          [
            "RedrivePolicy",
            '{"maxReceiveCount":2,"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:attrs"}',
            "InvalidAttributeValue",
          ],
          [
            "RedrivePolicy",
            '{"maxReceiveCount":2,"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:d.fifo"}',
            "InvalidAttributeValue",
          ],
          ["NoSuchAttribute", "1", "InvalidAttributeName"],
          ["VisibilityTimeout", "43201", "InvalidAttributeValue"],
        ]
      ) {
        const error = await sdkError(
          client.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: { [name]: value } })),
        );
        assert.equal(error.name, code, `${name}=${value}: ${error.message}`);
      }
      // A different attribute on CreateQueue of an existing queue is QueueNameExists.
      const exists = await sdkError(
        client.send(
          new CreateQueueCommand({ QueueName: "attrs", Attributes: { VisibilityTimeout: "9" } }),
        ),
      );
      assert.equal(exists.name, "QueueNameExists");
    },
  });

  Deno.test({
    name: `${store.name}: PurgeQueue empties a queue and DeleteQueue removes it`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client, server } = sqs;
      const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "gone" }));
      for (let i = 0; i < 5; i++) {
        await client.send(new SendMessageCommand({ QueueUrl, MessageBody: `m${i}` }));
      }
      await client.send(new ReceiveMessageCommand({ QueueUrl }));
      await client.send(new PurgeQueueCommand({ QueueUrl }));
      const stats = await server.request("GET", "/v1/queues/gone");
      assert.equal(stats.body.counts.pending, 0);
      assert.equal(stats.body.counts.leased, 0);
      assert.equal(stats.body.counts.cancelled, 5);
      await client.send(new SendMessageCommand({ QueueUrl, MessageBody: "after" }));
      await client.send(new DeleteQueueCommand({ QueueUrl }));
      const missing = await sdkError(client.send(new GetQueueUrlCommand({ QueueName: "gone" })));
      assert.equal(missing.name, "QueueDoesNotExist");
      const send = await sdkError(
        client.send(new SendMessageCommand({ QueueUrl, MessageBody: "x" })),
      );
      assert.equal(send.name, "QueueDoesNotExist");
      assert.deepEqual((await client.send(new ListQueuesCommand({}))).QueueUrls ?? [], []);
    },
  });
}

Deno.test("CreateQueue refuses a FIFO name without FifoQueue, bad tags, and a bad name", async () => {
  await using sqs = await startSqsServer();
  const { client } = sqs;
  const fifo = await sdkError(client.send(new CreateQueueCommand({ QueueName: "a.fifo" })));
  assert.equal(fifo.name, "InvalidAttributeValue");
  const standard = await sdkError(
    client.send(new CreateQueueCommand({ QueueName: "a", Attributes: { FifoQueue: "true" } })),
  );
  assert.equal(standard.name, "InvalidAttributeValue");
  const tags = await sdkError(
    client.send(new CreateQueueCommand({ QueueName: "t", tags: { ["k".repeat(129)]: "x" } })),
  );
  assert.equal(tags.name, "InvalidParameterValue");
  const bad = await sdkError(client.send(new CreateQueueCommand({ QueueName: "a b" })));
  assert.equal(bad.name, "InvalidParameterValue");
  const made = await client.send(
    new CreateQueueCommand({
      QueueName: "a.fifo",
      Attributes: { FifoQueue: "true", ContentBasedDeduplication: "true" },
    }),
  );
  assert.ok(made.QueueUrl?.endsWith("/000000000000/a.fifo"));
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: made.QueueUrl, AttributeNames: ["All"] }),
  );
  assert.equal(Attributes?.FifoQueue, "true");
  assert.equal(Attributes?.ContentBasedDeduplication, "true");
});

Deno.test("--sqs off leaves POST / to tegami's own API", async () => {
  await using sqs = await startSqsServer({ config: { sqs: "off" } });
  const error = await sdkError(sqs.client.send(new ListQueuesCommand({})));
  assert.equal(error.status, 404);
});

for (const store of STORES) {
  Deno.test({
    name:
      `${store.name}: a redrive policy moves a message past maxReceiveCount to its dead-letter queue`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client, server } = sqs;
      const dlq = await client.send(new CreateQueueCommand({ QueueName: "orders-dlq" }));
      const { Attributes: dlqAttributes } = await client.send(
        new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ["QueueArn"] }),
      );
      const policy = JSON.stringify({
        deadLetterTargetArn: dlqAttributes!.QueueArn,
        maxReceiveCount: 2,
      });
      const { QueueUrl } = await client.send(
        new CreateQueueCommand({ QueueName: "orders", Attributes: { RedrivePolicy: policy } }),
      );
      const settings = await server.request("GET", "/v1/queues/orders/settings");
      assert.equal(settings.body.dead_letter_queue, "orders-dlq");
      assert.equal(settings.body.max_attempts, 2);
      const read = await client.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["RedrivePolicy"] }),
      );
      assert.deepEqual(JSON.parse(read.Attributes!.RedrivePolicy!), JSON.parse(policy));
      const sent = await client.send(new SendMessageCommand({ QueueUrl, MessageBody: "poison" }));
      // Received twice and given back each time: the second receive was its last.
      for (let i = 0; i < 2; i++) {
        const [message] = (await client.send(new ReceiveMessageCommand({ QueueUrl }))).Messages!;
        await client.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl,
            ReceiptHandle: message.ReceiptHandle,
            VisibilityTimeout: 0,
          }),
        );
      }
      assert.equal(
        (await client.send(new ReceiveMessageCommand({ QueueUrl }))).Messages,
        undefined,
      );
      const [moved] = (await client.send(
        new ReceiveMessageCommand({ QueueUrl: dlq.QueueUrl, MessageSystemAttributeNames: ["All"] }),
      )).Messages!;
      assert.equal(moved.Body, "poison");
      assert.equal(moved.MessageId, sent.MessageId);
      assert.equal(moved.Attributes?.ApproximateReceiveCount, "1");
      const job = await server.request("GET", `/v1/jobs/${sent.MessageId}`);
      assert.equal(job.body.queue, "orders-dlq");
      assert.equal(job.body.dead_lettered_from, "orders");
      const sources = await client.send(
        new ListDeadLetterSourceQueuesCommand({ QueueUrl: dlq.QueueUrl }),
      );
      assert.deepEqual(sources.queueUrls, [QueueUrl]);
    },
  });
}

for (const store of STORES) {
  Deno.test({
    name:
      `${store.name}: a message move task moves a dead-letter queue's messages back, and stops when cancelled`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client, server } = sqs;
      const dlq = await client.send(new CreateQueueCommand({ QueueName: "jobs-dlq" }));
      const arnOf = async (QueueUrl: string) =>
        (await client.send(
          new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["QueueArn"] }),
        ))
          .Attributes!.QueueArn!;
      const dlqArn = await arnOf(dlq.QueueUrl!);
      const policy = JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 1 });
      const { QueueUrl } = await client.send(
        new CreateQueueCommand({ QueueName: "jobs", Attributes: { RedrivePolicy: policy } }),
      );
      // Three messages die once each and land in the dead-letter queue.
      for (const body of ["a", "b", "c"]) {
        await client.send(new SendMessageCommand({ QueueUrl, MessageBody: body }));
        const [m] = (await client.send(new ReceiveMessageCommand({ QueueUrl }))).Messages!;
        await client.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl,
            ReceiptHandle: m.ReceiptHandle,
            VisibilityTimeout: 0,
          }),
        );
      }
      assert.equal((await server.request("GET", "/v1/queues/jobs-dlq")).body.counts.pending, 3);
      const notDlq = await sdkError(
        client.send(new StartMessageMoveTaskCommand({ SourceArn: await arnOf(QueueUrl!) })),
      );
      assert.equal(notDlq.name, "InvalidParameterValue");
      const { TaskHandle } = await client.send(
        new StartMessageMoveTaskCommand({ SourceArn: dlqArn, MaxNumberOfMessagesPerSecond: 100 }),
      );
      assert.ok(TaskHandle);
      let results;
      for (let i = 0; i < 100; i++) {
        results = (await client.send(new ListMessageMoveTasksCommand({ SourceArn: dlqArn })))
          .Results!;
        if (results[0].Status === "COMPLETED") break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(results![0].Status, "COMPLETED");
      assert.equal(results![0].ApproximateNumberOfMessagesMoved, 3);
      assert.equal(results![0].ApproximateNumberOfMessagesToMove, 3);
      assert.equal(results![0].TaskHandle, undefined, "a finished task has no handle to cancel");
      const back =
        (await client.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 })))
          .Messages!;
      assert.deepEqual(back.map((m) => m.Body).sort(), ["a", "b", "c"]);
      const job = await server.request("GET", `/v1/jobs/${back[0].MessageId}`);
      assert.equal(job.body.queue, "jobs");
      assert.equal(job.body.dead_lettered_from, null);
      // They die again; a task at one message a second is cancelled after its first.
      for (const m of back) {
        await client.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl,
            ReceiptHandle: m.ReceiptHandle,
            VisibilityTimeout: 0,
          }),
        );
      }
      const slow = await client.send(
        new StartMessageMoveTaskCommand({ SourceArn: dlqArn, MaxNumberOfMessagesPerSecond: 1 }),
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      const cancelled = await client.send(
        new CancelMessageMoveTaskCommand({ TaskHandle: slow.TaskHandle }),
      );
      assert.equal(cancelled.ApproximateNumberOfMessagesMoved, 1);
      const [last] = (await client.send(new ListMessageMoveTasksCommand({ SourceArn: dlqArn })))
        .Results!;
      assert.equal(last.Status, "CANCELLED");
      assert.equal((await server.request("GET", "/v1/queues/jobs-dlq")).body.counts.pending, 2);
      const gone = await sdkError(
        client.send(new CancelMessageMoveTaskCommand({ TaskHandle: slow.TaskHandle })),
      );
      assert.equal(gone.name, "ResourceNotFoundException");
    },
  });
}

dropPgTestDatabaseAfterwards(pg);
