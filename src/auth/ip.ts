import net from 'node:net';

const MAPPED_DOTTED = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;

/**
 * The address a keyless caller is counted under (docs/contract.md §5: per client IP).
 *
 * - IPv4-mapped IPv6 (`::ffff:203.0.113.5`) is unwrapped to `203.0.113.5`, so a dual-stack
 *   socket does not give one client two budgets, and two mapped addresses stay two callers.
 * - Other IPv6 addresses are grouped by their /64 (`2001:db8:1:2::/64`): one subscriber usually
 *   owns a whole /64, so counting single addresses would hand out 2^64 budgets.
 * - Anything that is not an IP address (in-process requests, `local`) is kept as it is.
 */
export function limitAddress(raw: string): string {
  // The usual shape of a dual-stack socket's peer, answered without the general parse.
  const mapped = MAPPED_DOTTED.exec(raw);
  if (mapped && net.isIPv4(mapped[1]!)) return mapped[1]!;
  let a = raw.trim();
  const zone = a.indexOf('%');
  if (zone !== -1) a = a.slice(0, zone);
  if (a.startsWith('[') && a.endsWith(']')) a = a.slice(1, -1);
  if (net.isIPv4(a)) return a;
  if (!net.isIPv6(a)) return raw;
  const h = expandIPv6(a);
  // ::ffff:a.b.c.d (mapped) → the IPv4 address.
  if (h[0] === 0 && h[1] === 0 && h[2] === 0 && h[3] === 0 && h[4] === 0 && h[5] === 0xffff) {
    return `${h[6]! >> 8}.${h[6]! & 255}.${h[7]! >> 8}.${h[7]! & 255}`;
  }
  return `${compressIPv6([h[0]!, h[1]!, h[2]!, h[3]!, 0, 0, 0, 0])}/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (dotted IPv4 tails included). */
export function expandIPv6(a: string): number[] {
  let s = a.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const p = dotted[1]!.split('.').map(Number);
    s = s.slice(0, -dotted[1]!.length) + `${((p[0]! << 8) | p[1]!).toString(16)}:${((p[2]! << 8) | p[3]!).toString(16)}`;
  }
  const [head = '', tail] = s.split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((x) => parseInt(x, 16)));
  const left = parse(head);
  if (tail === undefined) return left;
  const right = parse(tail);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

function compressIPv6(h: number[]): string {
  // The longest run of zero groups (length ≥ 2) becomes '::' (RFC 5952).
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (h[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && h[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = h.map((x) => x.toString(16));
  if (bestLen < 2) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** Proxy addresses (exact, or CIDR like `10.0.0.0/8`) whose X-Forwarded-For is believed. */
export class TrustedProxies {
  readonly #list = new net.BlockList();
  readonly size: number;

  constructor(entries: readonly string[]) {
    let n = 0;
    for (const e of entries) {
      const [addr = '', bits] = e.split('/');
      const type = net.isIPv4(addr) ? 'ipv4' : net.isIPv6(addr) ? 'ipv6' : null;
      if (!type) throw new Error(`TRUSTED_PROXIES: "${e}" is not an IP address or CIDR range`);
      if (bits === undefined) this.#list.addAddress(addr, type);
      else {
        const prefix = Number(bits);
        if (!/^\d+$/.test(bits) || prefix > (type === 'ipv4' ? 32 : 128)) throw new Error(`TRUSTED_PROXIES: bad prefix in "${e}"`);
        this.#list.addSubnet(addr, prefix, type);
      }
      n++;
    }
    this.size = n;
  }

  has(address: string): boolean {
    if (this.size === 0) return false;
    const a = unmapped(address);
    if (net.isIPv4(a)) return this.#list.check(a, 'ipv4');
    if (net.isIPv6(a)) return this.#list.check(a, 'ipv6');
    return false;
  }
}

function unmapped(address: string): string {
  const a = address.trim().replace(/%.*$/, '');
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a);
  return m ? m[1]! : a;
}

/**
 * The client address of a request: the socket's peer, or — only when that peer is a trusted
 * proxy — the right-most X-Forwarded-For entry that is not itself a trusted proxy (the left
 * part of the header is whatever the client chose to send, so it is never believed).
 */
export function clientAddress(socket: string, forwardedFor: string | undefined, trusted: TrustedProxies): string {
  if (forwardedFor === undefined || !trusted.has(socket)) return socket;
  const hops = forwardedFor.split(',').map((s) => s.trim()).filter(Boolean);
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!;
    const bare = hop.startsWith('[') ? hop.slice(1, hop.indexOf(']')) : /^\d+\.\d+\.\d+\.\d+:\d+$/.test(hop) ? hop.split(':')[0]! : hop;
    if (!net.isIP(unmapped(bare))) return socket; // garbage in the chain: fall back to the peer
    if (!trusted.has(bare)) return bare;
  }
  return socket;
}
