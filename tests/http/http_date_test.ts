import assert from "node:assert/strict";
import { httpDate } from "../../lib/http/http_date.ts";

// RFC 9110 §5.6.7: IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
const IMF_FIXDATE =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

Deno.test("httpDate() answers the current second as an IMF-fixdate (RFC 9110 §5.6.7)", () => {
  // Sampled until the clock stays within one second around the call.
  for (let tries = 0; tries < 100; tries++) {
    const before = Date.now();
    const date = httpDate();
    const after = Date.now();
    if (Math.floor(before / 1000) !== Math.floor(after / 1000)) continue;
    assert.match(date, IMF_FIXDATE);
    assert.equal(date, new Date(Math.floor(before / 1000) * 1000).toUTCString());
    assert.equal(Date.parse(date), Math.floor(before / 1000) * 1000);
    return;
  }
  assert.fail("the clock crossed a second at every try");
});
