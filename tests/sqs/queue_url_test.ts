/**
 * Queue URLs read from requests: a text read before answers as it did the first time (the queue,
 * or `QueueDoesNotExist`), for its own identity only, and a long text is still read right.
 */

import assert from "node:assert/strict";
import { queueOfUrl, queueUrl } from "../../lib/sqs/queue_url.ts";
import { SqsError } from "../../lib/sqs/sqs_error.ts";

const identity = { account: "000000000000", region: "us-east-1" };
const other = { account: "111111111111", region: "us-east-1" };

function refused(text: string, who = identity): string {
  try {
    queueOfUrl(text, who);
  } catch (error) {
    assert.ok(error instanceof SqsError);
    return error.code;
  }
  assert.fail(`${text} named a queue`);
}

Deno.test("queueOfUrl() answers a URL read before as the first time, per identity", () => {
  const url = queueUrl("http://127.0.0.1:8080", identity, "orders");
  for (let i = 0; i < 3; i++) assert.equal(queueOfUrl(url, identity), "orders");
  // The same text names no queue of another account, before and after being read for one.
  assert.equal(refused(url, other), "QueueDoesNotExist");
  assert.equal(queueOfUrl(url, identity), "orders");
  for (const bad of ["not a url", "http://127.0.0.1:8080/000000000000/", "http://h/1/orders"]) {
    assert.equal(refused(bad), "QueueDoesNotExist");
    assert.equal(refused(bad), "QueueDoesNotExist");
  }
  // A percent-encoded name is decoded each time it is read.
  const spaced = "http://127.0.0.1:8080/000000000000/a%3Ab";
  assert.equal(queueOfUrl(spaced, identity), "a:b");
  assert.equal(queueOfUrl(spaced, identity), "a:b");
});

Deno.test("queueOfUrl() reads long texts and many URLs right", () => {
  const long = `http://127.0.0.1:8080/000000000000/orders?${"x".repeat(600)}`;
  assert.equal(queueOfUrl(long, identity), "orders");
  assert.equal(queueOfUrl(long, identity), "orders");
  // More URLs than are remembered: each still names its own queue.
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < 1500; i++) {
      assert.equal(queueOfUrl(queueUrl("http://h:1", identity, `q${i}`), identity), `q${i}`);
    }
  }
});
