/**
 * The connection limit's choice of whom to close (lib/http/peer_groups.ts): address groups, and
 * the longest idle of the group holding the most idle connections.
 */

import assert from "node:assert/strict";
import { type PeerConnection, PeerGroups, peerKey } from "../../lib/http/peer_groups.ts";

const tcp = (hostname: string): Deno.Addr => ({ transport: "tcp", hostname, port: 4000 });

Deno.test("an IPv4 address is its own group; IPv6 addresses group by their first 64 bits", () => {
  assert.equal(peerKey(tcp("203.0.113.7")), "203.0.113.7");
  assert.equal(peerKey(tcp("::ffff:203.0.113.7")), "203.0.113.7");
  assert.equal(peerKey(tcp("2001:db8:0:1::7")), "2001:db8:0:1::/64");
  assert.equal(peerKey(tcp("2001:0db8:0000:0001:ffff:0:0:9")), "2001:db8:0:1::/64");
  assert.equal(peerKey(tcp("2001:DB8:0:1:a:b:c:d")), "2001:db8:0:1::/64");
  assert.notEqual(peerKey(tcp("2001:db8:0:2::7")), peerKey(tcp("2001:db8:0:1::7")));
  assert.equal(peerKey(tcp("::1")), "0:0:0:0::/64");
  assert.equal(peerKey(tcp("fe80::1%eth0")), peerKey(tcp("fe80::2")));
  assert.equal(peerKey({ transport: "unix", path: "/run/t.sock" }), "unix");
});

Deno.test("a group is forgotten when its last connection leaves", () => {
  const peers = new PeerGroups();
  const a = peers.join(tcp("192.0.2.1"));
  assert.equal(peers.join(tcp("192.0.2.1")), a);
  assert.equal(a.open, 2);
  peers.leave(a);
  assert.equal(peers.size, 1);
  peers.leave(a);
  assert.equal(peers.size, 0);
  assert.notEqual(peers.join(tcp("192.0.2.1")), a, "a new group after the old one left");
});

Deno.test("the pick closes the longest idle of the group holding the most idle connections", () => {
  const peers = new PeerGroups();
  type Conn = PeerConnection & { name: string; busy: boolean };
  const conn = (name: string, host: string, idleSince: number, busy = false): Conn => ({
    name,
    group: peers.join(tcp(host)),
    idleSince,
    busy,
  });
  const idle = (c: Conn) => !c.busy;
  // A browser's socket, idle longest; four from another address, one of them busy; two more
  // from a third, older than most of the flood's.
  const browser = conn("browser", "192.0.2.1", 1);
  const flood = [
    conn("f1", "198.51.100.9", 5),
    conn("f2", "198.51.100.9", 3),
    conn("f3", "198.51.100.9", 6),
  ];
  const floodBusy = conn("f0", "198.51.100.9", 0, true);
  const pair = [conn("p1", "203.0.113.4", 2), conn("p2", "203.0.113.4", 4)];
  const all = [browser, ...flood, floodBusy, ...pair];
  assert.equal(peers.pick(all, idle)?.name, "f2", "the flood's oldest idle one, not the browser");
  // With the flood down to as many idle as the pair, the older of the two groups' oldest goes.
  assert.equal(peers.pick([browser, flood[0], flood[1], floodBusy, ...pair], idle)?.name, "p1");
  // Alone in their groups, connections go oldest first, as without groups.
  assert.equal(peers.pick([browser, flood[0], pair[1]], idle)?.name, "browser");
  assert.equal(peers.pick([floodBusy], idle), null, "none idle: nothing to close");
});

Deno.test("the pick in one pass agrees with counting every group first, on random connections", () => {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let round = 0; round < 500; round++) {
    const peers = new PeerGroups();
    type Conn = PeerConnection & { idle: boolean };
    const conns: Conn[] = Array.from({ length: 1 + Math.floor(random() * 40) }, () => ({
      group: peers.join(tcp(`192.0.2.${Math.floor(random() * 5)}`)),
      idleSince: Math.floor(random() * 20), // ties on purpose
      idle: random() < 0.7,
    }));
    const idle = conns.filter((c) => c.idle);
    const count = (c: Conn) => idle.filter((o) => o.group === c.group).length;
    // The reference: most idle in its group, then longest idle, then first in the order given.
    let expected: Conn | null = null;
    for (const c of idle) {
      if (
        expected === null || count(c) > count(expected) ||
        (count(c) === count(expected) && c.idleSince < expected.idleSince)
      ) expected = c;
    }
    const chosen = peers.pick(conns, (c) => c.idle);
    if (expected === null) assert.equal(chosen, null);
    else {
      assert.ok(chosen !== null);
      assert.equal(count(chosen), count(expected), `round ${round}: a group holding the most`);
      assert.equal(chosen.idleSince, expected.idleSince, `round ${round}: its longest idle`);
    }
  }
});
