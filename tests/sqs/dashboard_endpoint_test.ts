/**
 * The dashboard names the SQS endpoint: every SQS answer, an unsigned one included, says where
 * this server's queue URLs start (`x-tegami-queue-url-prefix`), and the page shows it in its
 * header (nothing with `--sqs off`), and shows a queue's SQS attributes and tags among its
 * settings (headless Chromium; skipped, with the reason printed, when it is missing).
 */

import assert from "node:assert/strict";
import { CreateQueueCommand } from "@aws-sdk/client-sqs";
import { browserMissing, openDashboard, textOf, until, untilText } from "../helpers/browser.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { sdkClient } from "./sqs_fixture.ts";

const missing = browserMissing("dashboard_endpoint_test.ts");

/** An unsigned SQS request, as the dashboard sends it. */
function unsigned(url: string): Promise<Response> {
  return fetch(`${url}/`, {
    method: "POST",
    headers: {
      "content-type": "application/x-amz-json-1.0",
      "x-amz-target": "AmazonSQS.ListQueues",
    },
    body: "{}",
  });
}

Deno.test("every SQS answer, a refused one too, says where the queue URLs start", async () => {
  await using server = await startTestServer({ config: { sqsAccount: "123456789012" } });
  const refused = await unsigned(server.url);
  await refused.body?.cancel();
  assert.equal(refused.status, 403);
  assert.equal(refused.headers.get("x-tegami-queue-url-prefix"), `${server.url}/123456789012/`);
  await using off = await startTestServer({ config: { sqs: "off" } });
  const native = await unsigned(off.url);
  await native.body?.cancel();
  assert.equal(native.headers.get("x-tegami-queue-url-prefix"), null);
});

Deno.test({
  name: "the dashboard's header names the SQS endpoint, and a queue's SQS attributes and tags",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const client = sdkClient(server.url);
    await client.send(
      new CreateQueueCommand({
        QueueName: "mail",
        Attributes: { DelaySeconds: "5" },
        tags: { team: "billing", solo: "" },
      }),
    );
    client.destroy();
    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await untilText(page, "#status-text", "live");
    await untilText(page, "#sqs-endpoint", `SQS ${server.url}/000000000000/QUEUE`);
    const chips = await until(
      "the settings chips of mail",
      () =>
        page.locator(`tr[data-queue="mail"] .qsettings .setting`).evaluateAll((els) =>
          els.map((el) => el.textContent)
        ),
      (texts) => texts.length > 0,
    );
    assert.ok(chips.includes("SQS DelaySeconds5"), JSON.stringify(chips));
    assert.ok(chips.includes("tagssolo, team=billing"), JSON.stringify(chips));
    assert.deepEqual(errors, []);
  },
});

Deno.test({
  name: "the dashboard's header names no SQS endpoint with --sqs off",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true, config: { sqs: "off" } });
    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await untilText(page, "#status-text", "live");
    // The probe is answered by tegami's own API; give it the time a page needs.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(await textOf(page, "#sqs-prefix"), "");
    assert.equal(
      await page.locator("#sqs-endpoint").evaluate((el) => el.classList.contains("hidden")),
      true,
    );
    assert.deepEqual(errors, []);
  },
});
