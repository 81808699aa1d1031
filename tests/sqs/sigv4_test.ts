/**
 * Signatures on the SQS API: the SigV4 computation against AWS's published `get-vanilla` case,
 * `@aws-sdk/client-sqs` signing with a token's name and token, the token's scopes and queues
 * applied as on tegami's own API, and the refusals (no signature, unknown key, a `sha256`-only
 * entry) with and without --tokens.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  CreateQueueCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { expectedSignature, sigV4Claim } from "../../lib/auth/sigv4.ts";
import { sdkClient, sdkError, startSqsServer } from "./sqs_fixture.ts";

Deno.test("expectedSignature() matches AWS's get-vanilla SigV4 test case", () => {
  const url = new URL("https://example.amazonaws.com/");
  const headers: Record<string, string> = {
    host: "example.amazonaws.com",
    "x-amz-date": "20150830T123600Z",
    authorization: "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/" +
      "aws4_request, SignedHeaders=host;x-amz-date, Signature=" + "0".repeat(64),
  };
  const header = (name: string) => headers[name] ?? null;
  const claim = sigV4Claim(url, header)!;
  assert.equal(claim.accessKey, "AKIDEXAMPLE");
  const signature = expectedSignature(
    claim,
    { method: "GET", url, header, body: new Uint8Array() },
    "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
  );
  assert.equal(signature, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
});

const ADMIN = "sqs-admin-token-0123456789";
const WORKER = "sqs-worker-token-0123456789";
const DIGEST_ONLY = "sqs-digest-token-0123456789";
const TOKENS = [
  { name: "admin", token: ADMIN, scopes: ["admin"] },
  { name: "billing-worker", token: WORKER, scopes: ["consume"], queues: ["billing*"] },
  {
    name: "digest",
    sha256: createHash("sha256").update(DIGEST_ONLY).digest("hex"),
    scopes: ["admin"],
  },
];

Deno.test("with --tokens, a token's name and token sign SQS requests within its scopes and queues", async () => {
  await using sqs = await startSqsServer({
    tokens: TOKENS,
    credentials: { accessKeyId: "admin", secretAccessKey: ADMIN },
  });
  const { client, server } = sqs;
  const billing = (await client.send(new CreateQueueCommand({ QueueName: "billing" }))).QueueUrl;
  const other = (await client.send(new CreateQueueCommand({ QueueName: "other" }))).QueueUrl;
  await client.send(new SendMessageCommand({ QueueUrl: billing, MessageBody: "invoice" }));

  const worker = sdkClient(server.url, { accessKeyId: "billing-worker", secretAccessKey: WORKER });
  try {
    const got = await worker.send(new ReceiveMessageCommand({ QueueUrl: billing }));
    assert.equal(got.Messages?.[0].Body, "invoice");
    // Consume only: no producing, no creating; its queues only, in lists too.
    for (
      const call of [
        worker.send(new SendMessageCommand({ QueueUrl: billing, MessageBody: "x" })),
        worker.send(new CreateQueueCommand({ QueueName: "billing-2" })),
        worker.send(new ReceiveMessageCommand({ QueueUrl: other })),
        worker.send(new GetQueueUrlCommand({ QueueName: "other" })),
      ]
    ) {
      const error = await sdkError(call);
      assert.equal(error.name, "AccessDenied");
      assert.equal(error.status, 403);
    }
    const listed = await worker.send(new ListQueuesCommand({}));
    assert.deepEqual(listed.QueueUrls, [billing]);
  } finally {
    worker.destroy();
  }

  const refusals: [string, string, string][] = [
    ["admin", ADMIN + "x", "SignatureDoesNotMatch"],
    ["nobody", ADMIN, "InvalidClientTokenId"],
    ["digest", DIGEST_ONLY, "InvalidClientTokenId"],
  ];
  for (const [key, secret, code] of refusals) {
    const client = sdkClient(server.url, { accessKeyId: key, secretAccessKey: secret });
    try {
      const error = await sdkError(client.send(new ListQueuesCommand({})));
      assert.equal(error.name, code, `${key}: ${error.message}`);
      assert.equal(error.status, 403);
    } finally {
      client.destroy();
    }
  }
});

/** Posts a raw SQS request and answers its status and body. */
async function rawPost(
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; text: string; headers: Headers }> {
  const response = await fetch(url, { method: "POST", headers, body });
  return { status: response.status, text: await response.text(), headers: response.headers };
}

for (const tokens of [undefined, TOKENS]) {
  Deno.test(`a request without a SigV4 signature is refused (${tokens ? "with" : "without"} --tokens)`, async () => {
    await using sqs = await startSqsServer({ tokens });
    const url = sqs.server.url + "/";
    const form = await rawPost(
      url,
      { "content-type": "application/x-www-form-urlencoded" },
      "Action=ListQueues&Version=2012-11-05",
    );
    assert.equal(form.status, 403);
    assert.match(form.text, /<Code>MissingAuthenticationToken<\/Code>/);
    const bearer = await rawPost(
      url,
      {
        "content-type": "application/x-amz-json-1.0",
        "x-amz-target": "AmazonSQS.ListQueues",
        authorization: `Bearer ${ADMIN}`,
      },
      "{}",
    );
    assert.equal(bearer.status, 403);
    assert.equal(JSON.parse(bearer.text).__type, "com.amazonaws.sqs#MissingAuthenticationToken");
    assert.equal(bearer.headers.get("x-amzn-query-error"), "MissingAuthenticationToken;Sender");
  });
}

Deno.test("without --tokens, a cross-site form post is refused by its Origin", async () => {
  await using sqs = await startSqsServer();
  const answer = await rawPost(
    sqs.server.url + "/",
    {
      "content-type": "application/x-www-form-urlencoded",
      origin: "https://evil.example",
      authorization: "AWS4-HMAC-SHA256 Credential=a/20240101/us-east-1/sqs/aws4_request, " +
        `SignedHeaders=host, Signature=${"0".repeat(64)}`,
      "x-amz-date": "20240101T000000Z",
    },
    "Action=ListQueues",
  );
  assert.equal(answer.status, 403);
  assert.match(answer.text, /<Code>AccessDenied<\/Code>/);
});
