/**
 * Which connection makes room at the connection limit. Connections are grouped by the address
 * they come from (an IPv4 address; an IPv6 address's first 64 bits, what one host is usually
 * given), and the one closed is the longest idle of the group holding the most idle connections.
 * So a client that floods the server with connections that never send anything closes its own,
 * not the others' (a browser's WebSocket before its `auth` frame counts as idle); among groups
 * holding as many, the longest idle goes first, as without groups.
 *
 * @module
 */

/** The connections of one address group, as the front door counts them. */
export interface PeerGroup {
  /** The group's key (see {@linkcode peerKey}). */
  readonly key: string;
  /** Connections of the group open now. */
  open: number;
  /** The pick that last counted {@linkcode idle} (what an older pick counted is stale). */
  pick: number;
  /** Idle connections of the group, as the pick {@linkcode pick} counted them. */
  idle: number;
  /** The longest idle of them, as that pick found it. */
  oldest: PeerConnection | null;
}

/** A connection as the pick sees it. */
export interface PeerConnection {
  /** Its address group. */
  readonly group: PeerGroup;
  /** When it last became idle (`performance.now()`). */
  readonly idleSince: number;
}

/**
 * The group key of a remote address: an IPv4 address as it is, an IPv6 address by its first 64
 * bits (an IPv4 address written as IPv6, `::ffff:a.b.c.d`, as the IPv4 address); any other address
 * (a Unix socket) is one group.
 */
export function peerKey(addr: Deno.Addr): string {
  if (addr.transport !== "tcp" && addr.transport !== "udp") return addr.transport;
  const host = addr.hostname;
  if (!host.includes(":")) return host;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(host);
  if (mapped !== null) return mapped[1];
  return ipv6Prefix64(host);
}

/** The first four groups of an IPv6 address, each without leading zeros, `:`-joined. */
function ipv6Prefix64(host: string): string {
  const address = host.split("%", 1)[0].toLowerCase(); // a zone (fe80::1%eth0) is the same host
  const [head, tail] = address.includes("::") ? address.split("::", 2) : [address, null];
  const front = head === "" ? [] : head.split(":");
  let groups: string[];
  if (tail === null) groups = front;
  else {
    const back = tail === "" ? [] : tail.split(":");
    groups = [...front, ...Array(Math.max(0, 8 - front.length - back.length)).fill("0"), ...back];
  }
  return groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, "")).join(":") + "::/64";
}

/** The open connections' address groups. */
export class PeerGroups {
  readonly #groups = new Map<string, PeerGroup>();
  #picks = 0;

  /** The group of a connection from `addr`, counting it open. */
  join(addr: Deno.Addr): PeerGroup {
    const key = peerKey(addr);
    let group = this.#groups.get(key);
    if (group === undefined) {
      group = { key, open: 0, pick: 0, idle: 0, oldest: null };
      this.#groups.set(key, group);
    }
    group.open++;
    return group;
  }

  /** Counts one connection of `group` closed (call once per {@linkcode join}). */
  leave(group: PeerGroup): void {
    if (--group.open === 0) this.#groups.delete(group.key);
  }

  /** Groups with a connection open now. */
  get size(): number {
    return this.#groups.size;
  }

  /**
   * The connection to close to make room: of those `idle` says may be closed, the longest idle of
   * the group holding the most of them; null when none may be. One pass over
   * `connections.values()` (a map's, a set's or an array's), allocating nothing, so a flood at
   * the limit costs what choosing the longest idle alone did.
   */
  pick<C extends PeerConnection>(
    connections: { values(): Iterable<C> },
    idle: (c: C) => boolean,
  ): C | null {
    const pick = ++this.#picks;
    // The best group so far: only the group just counted can overtake it, so comparing that one
    // with it after each count keeps it the best of all at the end.
    let best: PeerGroup | null = null;
    for (const c of connections.values()) {
      if (!idle(c)) continue;
      const group = c.group;
      if (group.pick !== pick) {
        group.pick = pick;
        group.idle = 0;
        group.oldest = c;
      } else if (c.idleSince < group.oldest!.idleSince) group.oldest = c;
      group.idle++;
      if (
        best === null || group.idle > best.idle ||
        (group.idle === best.idle && group.oldest!.idleSince < best.oldest!.idleSince)
      ) best = group;
    }
    return best === null ? null : best.oldest as C;
  }
}
