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
  /** The pick that last counted {@linkcode idle} (an idle count of an older pick is stale). */
  pick: number;
  /** Idle connections of the group, as the pick {@linkcode pick} counted them. */
  idle: number;
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
      group = { key, open: 0, pick: 0, idle: 0 };
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
   * the group holding the most of them; null when none may be. Two passes over
   * `connections.values()` (a map's, a set's or an array's), neither allocating, so a flood at
   * the limit costs about what one pass did.
   */
  pick<C extends PeerConnection>(
    connections: { values(): Iterable<C> },
    idle: (c: C) => boolean,
  ): C | null {
    const pick = ++this.#picks;
    for (const c of connections.values()) {
      if (!idle(c)) continue;
      const group = c.group;
      if (group.pick !== pick) {
        group.pick = pick;
        group.idle = 0;
      }
      group.idle++;
    }
    let chosen: C | null = null;
    for (const c of connections.values()) {
      if (!idle(c)) continue;
      if (
        chosen === null || c.group.idle > chosen.group.idle ||
        (c.group.idle === chosen.group.idle && c.idleSince < chosen.idleSince)
      ) chosen = c;
    }
    return chosen;
  }
}
