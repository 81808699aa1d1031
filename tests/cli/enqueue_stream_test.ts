import assert from "node:assert/strict";
import { TegamiClient } from "../../lib/client/mod.ts";
import { enqueueStream, progressBar } from "../../lib/cli/enqueue_stream.ts";
import { startTestServer } from "../helpers/test_server.ts";

Deno.test("progressBar() draws the share done, and nothing when the total is unknown", () => {
  assert.equal(progressBar(50, 100, 10), "[█████░░░░░]  50% ");
  assert.equal(progressBar(100, 100, 4), "[████] 100% ");
  assert.equal(progressBar(5, null), "");
});

Deno.test("enqueueStream() reports progress with a bar when the input size is known", async () => {
  await using server = await startTestServer();
  const text = Array.from({ length: 25 }, (_, i) => JSON.stringify({ n: i })).join("\n") + "\n";
  const bytes = new TextEncoder().encode(text);
  const lines: string[] = [];
  const summary = await enqueueStream(
    new TegamiClient({ url: server.url }),
    "p",
    new Blob([bytes]).stream(),
    { batchSize: 10, inputBytes: bytes.byteLength, progress: (line) => lines.push(line) },
  );
  assert.equal(summary.sent, 25);
  assert.equal(lines.length, 3);
  assert.match(lines[2], /^\[█+\] 100% enqueued 25 jobs to p/);
});

Deno.test("enqueueStream() fails when the input holds no line", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  for (const text of ["", "\n\n  \n"]) {
    const summary = await enqueueStream(client, "p", new Blob([text]).stream());
    assert.equal(summary.failed, true);
    assert.equal(summary.lines, 0);
    assert.match(summary.line, /; stopped: the input was empty/);
  }
});

Deno.test("enqueueStream() fails when the input cannot be read, naming the read error", async () => {
  await using server = await startTestServer();
  let pulls = 0;
  const input = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulls++ === 0) controller.enqueue(new TextEncoder().encode("1\n2\n"));
      else controller.error(new Error("Is a directory (os error 21)"));
    },
  });
  const summary = await enqueueStream(new TegamiClient({ url: server.url }), "p", input, {
    batchSize: 1,
  });
  assert.equal(summary.failed, true);
  assert.ok(summary.sent >= 1, "the batch read before the error was sent");
  assert.match(summary.line, /; stopped: Cannot read the input: Is a directory \(os error 21\)$/);
});
