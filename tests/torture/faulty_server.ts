/**
 * `tegami serve` over a store that breaks its guarantees on purpose (`faulty_store.ts`): the
 * server of the crash campaign's positive controls.
 *
 * ```sh
 * deno run -A tests/torture/faulty_server.ts serve --fault any-token --db /tmp/t.db --port 0
 * ```
 *
 * It writes a loud line to stderr before anything else, so such a server never passes unnoticed.
 *
 * @module
 */

import { serveCommand } from "../../lib/cli/serve_command.ts";
import { type Fault, FAULTS, faultyStoreFactory } from "./faulty_store.ts";

const args = Deno.args[0] === "serve" ? Deno.args.slice(1) : [...Deno.args];
const at = args.indexOf("--fault");
const fault = at >= 0 ? args[at + 1] : undefined;
if (fault === undefined || !(FAULTS as readonly string[]).includes(fault)) {
  console.error(`faulty_server: give --fault ${FAULTS.join("|")}`);
  Deno.exit(2);
}
args.splice(at, 2);
console.error(
  `UNSAFE FAULT "${fault}" IS ON: this server breaks its guarantees on purpose (test only); ` +
    "acknowledged writes may be lost, stale tokens accepted or jobs leased twice at once",
);
Deno.exit(
  await serveCommand(args, Deno.env.toObject(), {
    version: "faulty",
    openStore: faultyStoreFactory(fault as Fault),
  }),
);
