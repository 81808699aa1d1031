/**
 * The queue attributes the SQS API keeps in a queue's `sqs_attributes` (DelaySeconds,
 * ReceiveMessageWaitTimeSeconds, MaximumMessageSize, Policy, RedriveAllowPolicy, KMS and SSE)
 * and its tags (TagQueue, UntagQueue, ListQueueTags, CreateQueue's tags), through
 * `@aws-sdk/client-sqs`: what each does, that they survive a restart and are shared by servers
 * on one PostgreSQL schema, and how tegami's own settings API shows them.
 */

import assert from "node:assert/strict";
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ListQueueTagsCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  TagQueueCommand,
  UntagQueueCommand,
} from "@aws-sdk/client-sqs";
import { dropPgTestDatabaseAfterwards } from "../helpers/pg.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { pg, sdkClient, sdkError, startSqsServer, STORES } from "./sqs_fixture.ts";

const POLICY = JSON.stringify({
  Version: "2012-10-17",
  Statement: [{ Effect: "Allow", Principal: "*", Action: "sqs:SendMessage", Resource: "*" }],
});

/** The attributes set on the queue of the persistence cases, and how they are answered. */
const KEPT: Record<string, string> = {
  DelaySeconds: "7",
  ReceiveMessageWaitTimeSeconds: "3",
  MaximumMessageSize: "2048",
  Policy: POLICY,
  KmsMasterKeyId: "alias/aws/sqs",
  KmsDataKeyReusePeriodSeconds: "600",
  SqsManagedSseEnabled: "true",
  RedriveAllowPolicy: '{"redrivePermission":"denyAll"}',
};

for (const store of STORES) {
  Deno.test({
    name:
      `${store.name}: kept attributes and tags survive a restart and are shared by another server`,
    ignore: store.ignore,
    fn: async () => {
      const dir = await Deno.makeTempDir({ prefix: "tegami-sqs-kept-" });
      const config = store.config();
      try {
        {
          await using first = await startTestServer({ realTime: true, dir, config });
          const client = sdkClient(first.url);
          const { QueueUrl } = await client.send(
            new CreateQueueCommand({ QueueName: "kept", tags: { team: "billing" } }),
          );
          await client.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: KEPT }));
          await client.send(new TagQueueCommand({ QueueUrl, Tags: { env: "prod" } }));
          if (store.name === "postgres") {
            // A second server on the same schema sees them at once.
            await using second = await startTestServer({ realTime: true, config });
            const other = sdkClient(second.url);
            const url = `${second.url}/000000000000/kept`;
            const read = await other.send(
              new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["All"] }),
            );
            for (const [name, value] of Object.entries(KEPT)) {
              assert.equal((read.Attributes as Record<string, string>)[name], value, name);
            }
            const tags = await other.send(new ListQueueTagsCommand({ QueueUrl: url }));
            assert.deepEqual(tags.Tags, { env: "prod", team: "billing" });
            other.destroy();
          }
          client.destroy();
        }
        await using again = await startTestServer({ realTime: true, dir, config });
        const client = sdkClient(again.url);
        const QueueUrl = `${again.url}/000000000000/kept`;
        const { Attributes } = await client.send(
          new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["All"] }),
        );
        for (const [name, value] of Object.entries(KEPT)) {
          assert.equal((Attributes as Record<string, string>)[name], value, name);
        }
        const { Tags } = await client.send(new ListQueueTagsCommand({ QueueUrl }));
        assert.deepEqual(Tags, { env: "prod", team: "billing" });
        // tegami's own settings API shows the same, and a write of what it read keeps them.
        const settings = await again.request("GET", "/v1/queues/kept/settings");
        assert.deepEqual(settings.body.sqs_attributes, KEPT);
        assert.deepEqual(settings.body.tags, { env: "prod", team: "billing" });
        const put = await again.request("PUT", "/v1/queues/kept/settings", settings.body);
        assert.equal(put.status, 200);
        assert.deepEqual(put.body, settings.body);
        assert.deepEqual(
          (await client.send(new ListQueueTagsCommand({ QueueUrl }))).Tags,
          { env: "prod", team: "billing" },
        );
        client.destroy();
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });

  Deno.test({
    name: `${store.name}: a queue's DelaySeconds delays a message sent without its own`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client, server } = sqs;
      const { QueueUrl } = await client.send(
        new CreateQueueCommand({ QueueName: "later", Attributes: { DelaySeconds: "1" } }),
      );
      const sentAt = Date.now();
      await client.send(new SendMessageCommand({ QueueUrl, MessageBody: "queue's delay" }));
      await client.send(
        new SendMessageCommand({ QueueUrl, MessageBody: "own delay", DelaySeconds: 0 }),
      );
      const stats = await server.request("GET", "/v1/queues/later");
      assert.equal(stats.body.counts.delayed, 1);
      assert.equal(stats.body.counts.pending, 1);
      const first = await client.send(
        new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }),
      );
      assert.deepEqual(first.Messages?.map((m) => m.Body), ["own delay"]);
      const second = await client.send(
        new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 5 }),
      );
      assert.deepEqual(second.Messages?.map((m) => m.Body), ["queue's delay"]);
      assert.ok(Date.now() - sentAt >= 900, "held for the queue's second");
    },
  });

  Deno.test({
    name:
      `${store.name}: a queue's ReceiveMessageWaitTimeSeconds is the wait of a receive without its own`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client } = sqs;
      const { QueueUrl } = await client.send(
        new CreateQueueCommand({
          QueueName: "waits",
          Attributes: { ReceiveMessageWaitTimeSeconds: "1" },
        }),
      );
      let started = Date.now();
      const waited = await client.send(new ReceiveMessageCommand({ QueueUrl }));
      assert.equal(waited.Messages, undefined);
      assert.ok(Date.now() - started >= 900, `waited ${Date.now() - started} ms`);
      started = Date.now();
      await client.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 0 }));
      assert.ok(Date.now() - started < 900, "its own WaitTimeSeconds wins");
      // A message sent during the queue's long poll is answered at once.
      const receiving = client.send(new ReceiveMessageCommand({ QueueUrl }));
      await client.send(new SendMessageCommand({ QueueUrl, MessageBody: "soon" }));
      assert.equal((await receiving).Messages?.[0].Body, "soon");
    },
  });

  Deno.test({
    name: `${store.name}: a body over the queue's MaximumMessageSize is refused as AWS refuses it`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client } = sqs;
      const { QueueUrl } = await client.send(
        new CreateQueueCommand({ QueueName: "small", Attributes: { MaximumMessageSize: "1024" } }),
      );
      const { Attributes } = await client.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["MaximumMessageSize"] }),
      );
      assert.deepEqual(Attributes, { MaximumMessageSize: "1024" });
      await client.send(new SendMessageCommand({ QueueUrl, MessageBody: "é".repeat(512) }));
      const big = await sdkError(
        client.send(new SendMessageCommand({ QueueUrl, MessageBody: "é".repeat(512) + "x" })),
      );
      assert.equal(big.name, "InvalidParameterValue");
      assert.equal(big.status, 400);
      assert.match(big.message, /shorter than 1025 bytes/);
      const batch = await client.send(
        new SendMessageBatchCommand({
          QueueUrl,
          Entries: [
            { Id: "fits", MessageBody: "x".repeat(1024) },
            { Id: "over", MessageBody: "x".repeat(1025) },
          ],
        }),
      );
      assert.deepEqual(batch.Successful?.map((e) => e.Id), ["fits"]);
      assert.deepEqual(batch.Failed?.map((e) => [e.Id, e.Code]), [
        ["over", "InvalidParameterValue"],
      ]);
      // Back to the server's largest: the attribute is no longer kept.
      await client.send(
        new SetQueueAttributesCommand({
          QueueUrl,
          Attributes: { MaximumMessageSize: String(1024 * 1024 - 2) },
        }),
      );
      const settings = await sqs.server.request("GET", "/v1/queues/small/settings");
      assert.equal("sqs_attributes" in settings.body, false, "no attribute kept, none shown");
      await client.send(new SendMessageCommand({ QueueUrl, MessageBody: "x".repeat(1025) }));
    },
  });

  Deno.test({
    name: `${store.name}: TagQueue, UntagQueue and ListQueueTags keep AWS's limits`,
    ignore: store.ignore,
    fn: async () => {
      await using sqs = await startSqsServer({ store });
      const { client } = sqs;
      const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "tagged" }));
      assert.equal((await client.send(new ListQueueTagsCommand({ QueueUrl }))).Tags, undefined);
      await client.send(new TagQueueCommand({ QueueUrl, Tags: { a: "1", b: "2", c: "" } }));
      await client.send(new TagQueueCommand({ QueueUrl, Tags: { a: "one" } }));
      assert.deepEqual((await client.send(new ListQueueTagsCommand({ QueueUrl }))).Tags, {
        a: "one",
        b: "2",
        c: "",
      });
      await client.send(new UntagQueueCommand({ QueueUrl, TagKeys: ["b", "missing"] }));
      assert.deepEqual((await client.send(new ListQueueTagsCommand({ QueueUrl }))).Tags, {
        a: "one",
        c: "",
      });
      const many = Object.fromEntries(Array.from({ length: 49 }, (_, i) => [`k${i}`, "v"]));
      const tooMany = await sdkError(client.send(new TagQueueCommand({ QueueUrl, Tags: many })));
      assert.equal(tooMany.name, "InvalidParameterValue");
      for (
        const tags of [{ ["k".repeat(129)]: "v" }, { k: "v".repeat(257) }, { "": "v" }] as Record<
          string,
          string
        >[]
      ) {
        const error = await sdkError(client.send(new TagQueueCommand({ QueueUrl, Tags: tags })));
        assert.equal(error.name, "InvalidParameterValue", JSON.stringify(tags).slice(0, 40));
      }
      await client.send(
        new TagQueueCommand({ QueueUrl, Tags: { ["k".repeat(128)]: "v".repeat(256) } }),
      );
      assert.equal(
        Object.keys((await client.send(new ListQueueTagsCommand({ QueueUrl }))).Tags!).length,
        3,
      );
      const missing = await sdkError(
        client.send(
          new ListQueueTagsCommand({ QueueUrl: `${sqs.server.url}/000000000000/nope` }),
        ),
      );
      assert.equal(missing.name, "QueueDoesNotExist");
      // A queue holding only tags still exists.
      const { QueueUrl: bare } = await client.send(
        new CreateQueueCommand({ QueueName: "bare", tags: { x: "y" } }),
      );
      await sqs.server.request("PUT", "/v1/queues/bare/settings", { tags: { x: "y" } });
      assert.deepEqual((await client.send(new ListQueueTagsCommand({ QueueUrl: bare }))).Tags, {
        x: "y",
      });
    },
  });
}

Deno.test("RedriveAllowPolicy decides which queues may name a queue as their dead-letter queue", async () => {
  await using sqs = await startSqsServer();
  const { client } = sqs;
  const arn = (name: string) => `arn:aws:sqs:us-east-1:000000000000:${name}`;
  const redrive = (target: string) =>
    JSON.stringify({ maxReceiveCount: 3, deadLetterTargetArn: arn(target) });
  await client.send(
    new CreateQueueCommand({
      QueueName: "closed-dlq",
      Attributes: { RedriveAllowPolicy: '{"redrivePermission":"denyAll"}' },
    }),
  );
  await client.send(
    new CreateQueueCommand({
      QueueName: "picky-dlq",
      Attributes: {
        RedriveAllowPolicy: JSON.stringify({
          redrivePermission: "byQueue",
          sourceQueueArns: [arn("friend")],
        }),
      },
    }),
  );
  const denied = await sdkError(
    client.send(
      new CreateQueueCommand({
        QueueName: "source",
        Attributes: { RedrivePolicy: redrive("closed-dlq") },
      }),
    ),
  );
  assert.equal(denied.name, "InvalidAttributeValue");
  assert.match(denied.message, /RedriveAllowPolicy/);
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "source" }));
  const stranger = await sdkError(
    client.send(
      new SetQueueAttributesCommand({
        QueueUrl,
        Attributes: { RedrivePolicy: redrive("picky-dlq") },
      }),
    ),
  );
  assert.equal(stranger.name, "InvalidAttributeValue");
  await client.send(
    new CreateQueueCommand({
      QueueName: "friend",
      Attributes: { RedrivePolicy: redrive("picky-dlq") },
    }),
  );
  const settings = await sqs.server.request("GET", "/v1/queues/friend/settings");
  assert.equal(settings.body.dead_letter_queue, "picky-dlq");
  // Clearing a policy with an empty value.
  await client.send(
    new SetQueueAttributesCommand({
      QueueUrl: `${sqs.server.url}/000000000000/closed-dlq`,
      Attributes: { RedriveAllowPolicy: "" },
    }),
  );
  await client.send(
    new SetQueueAttributesCommand({
      QueueUrl,
      Attributes: { RedrivePolicy: redrive("closed-dlq") },
    }),
  );
});

Deno.test("the settings API refuses sqs_attributes and tags that SQS would refuse", async () => {
  await using sqs = await startSqsServer();
  for (
    const [body, field] of [
      [{ sqs_attributes: { DelaySeconds: "901" } }, "sqs_attributes.DelaySeconds"],
      [{ sqs_attributes: { VisibilityTimeout: "5" } }, "sqs_attributes.VisibilityTimeout"],
      [{ sqs_attributes: { Policy: "[]" } }, "sqs_attributes.Policy"],
      [{ sqs_attributes: { DelaySeconds: 5 } }, "sqs_attributes.DelaySeconds"],
      [{ sqs_attributes: [] }, "sqs_attributes"],
      [{ tags: { ["k".repeat(129)]: "v" } }, "tags." + "k".repeat(128)],
      [{ tags: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, ""])) }, "tags"],
    ] as const
  ) {
    const answer = await sqs.server.request("PUT", "/v1/queues/q/settings", body);
    assert.equal(answer.status, 400, JSON.stringify(body).slice(0, 60));
    assert.equal(answer.body.error.code, "validation_failed");
    assert.ok(
      answer.body.error.message.includes(`"${field.slice(0, 40)}`),
      `${answer.body.error.message} names ${field.slice(0, 40)}`,
    );
  }
  // Empty objects are no setting at all, and not shown.
  const empty = await sqs.server.request("PUT", "/v1/queues/q/settings", {
    sqs_attributes: {},
    tags: {},
  });
  assert.equal(empty.status, 200);
  assert.equal("sqs_attributes" in empty.body, false);
  assert.equal("tags" in empty.body, false);
  // What the settings API keeps, the SQS API applies.
  await sqs.server.request("PUT", "/v1/queues/q/settings", {
    sqs_attributes: { MaximumMessageSize: "1024" },
  });
  const QueueUrl = `${sqs.server.url}/000000000000/q`;
  const big = await sqs.client.send(
    new SendMessageBatchCommand({
      QueueUrl,
      Entries: [{ Id: "a", MessageBody: "x".repeat(1025) }],
    }),
  );
  assert.equal(big.Failed?.[0].Code, "InvalidParameterValue");
});

dropPgTestDatabaseAfterwards(pg);
