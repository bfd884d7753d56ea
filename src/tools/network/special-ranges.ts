/**
 * The special-purpose address blocks ip_calc names, from the IANA IPv4 and IPv6 Special-Purpose
 * Address Registries (RFC 6890 and the RFCs that updated them since) plus the multicast blocks
 * (RFC 5771, RFC 4291 §2.7). Written out here rather than read from ipaddr.js's own table so
 * the names are stable, documented (docs/network-tools.md) and checked against the RFCs in the
 * tests; ipaddr.js still does the parsing and the matching.
 */
import ipaddr from 'ipaddr.js';

/** One registry row: a block and the name ip_calc answers for addresses inside it. */
export interface SpecialRange {
  cidr: string;
  name: string;
  rfc: string;
}

export const IPV4_SPECIAL: readonly SpecialRange[] = [
  { cidr: '0.0.0.0/8', name: 'this-network', rfc: 'RFC 791' },
  { cidr: '0.0.0.0/32', name: 'unspecified', rfc: 'RFC 1122' },
  { cidr: '10.0.0.0/8', name: 'private', rfc: 'RFC 1918' },
  { cidr: '100.64.0.0/10', name: 'carrier-grade-nat', rfc: 'RFC 6598' },
  { cidr: '127.0.0.0/8', name: 'loopback', rfc: 'RFC 1122' },
  { cidr: '169.254.0.0/16', name: 'link-local', rfc: 'RFC 3927' },
  { cidr: '172.16.0.0/12', name: 'private', rfc: 'RFC 1918' },
  { cidr: '192.0.0.0/24', name: 'ietf-protocol-assignments', rfc: 'RFC 6890' },
  { cidr: '192.0.2.0/24', name: 'documentation', rfc: 'RFC 5737' },
  { cidr: '192.31.196.0/24', name: 'as112', rfc: 'RFC 7535' },
  { cidr: '192.52.193.0/24', name: 'amt', rfc: 'RFC 7450' },
  { cidr: '192.88.99.0/24', name: '6to4-relay-anycast', rfc: 'RFC 7526' },
  { cidr: '192.168.0.0/16', name: 'private', rfc: 'RFC 1918' },
  { cidr: '192.175.48.0/24', name: 'as112', rfc: 'RFC 7534' },
  { cidr: '198.18.0.0/15', name: 'benchmarking', rfc: 'RFC 2544' },
  { cidr: '198.51.100.0/24', name: 'documentation', rfc: 'RFC 5737' },
  { cidr: '203.0.113.0/24', name: 'documentation', rfc: 'RFC 5737' },
  { cidr: '224.0.0.0/4', name: 'multicast', rfc: 'RFC 5771' },
  { cidr: '240.0.0.0/4', name: 'reserved', rfc: 'RFC 1112' },
  { cidr: '255.255.255.255/32', name: 'broadcast', rfc: 'RFC 919' },
];

export const IPV6_SPECIAL: readonly SpecialRange[] = [
  { cidr: '::/128', name: 'unspecified', rfc: 'RFC 4291' },
  { cidr: '::1/128', name: 'loopback', rfc: 'RFC 4291' },
  { cidr: '::ffff:0:0/96', name: 'ipv4-mapped', rfc: 'RFC 4291' },
  { cidr: '64:ff9b::/96', name: 'nat64', rfc: 'RFC 6052' },
  { cidr: '64:ff9b:1::/48', name: 'nat64-local', rfc: 'RFC 8215' },
  { cidr: '100::/64', name: 'discard-only', rfc: 'RFC 6666' },
  { cidr: '2001::/23', name: 'ietf-protocol-assignments', rfc: 'RFC 2928' },
  { cidr: '2001::/32', name: 'teredo', rfc: 'RFC 4380' },
  { cidr: '2001:2::/48', name: 'benchmarking', rfc: 'RFC 5180' },
  { cidr: '2001:3::/32', name: 'amt', rfc: 'RFC 7450' },
  { cidr: '2001:4:112::/48', name: 'as112', rfc: 'RFC 7535' },
  { cidr: '2001:20::/28', name: 'orchid-v2', rfc: 'RFC 7343' },
  { cidr: '2001:db8::/32', name: 'documentation', rfc: 'RFC 3849' },
  { cidr: '2002::/16', name: '6to4', rfc: 'RFC 3056' },
  { cidr: '2620:4f:8000::/48', name: 'as112', rfc: 'RFC 7534' },
  { cidr: '3fff::/20', name: 'documentation', rfc: 'RFC 9637' },
  { cidr: 'fc00::/7', name: 'unique-local', rfc: 'RFC 4193' },
  { cidr: 'fe80::/10', name: 'link-local', rfc: 'RFC 4291' },
  { cidr: 'ff00::/8', name: 'multicast', rfc: 'RFC 4291' },
];

type Block = [ipaddr.IPv4 | ipaddr.IPv6, number];
const parsed = (rows: readonly SpecialRange[]): Array<{ block: Block; name: string }> =>
  rows.map((r) => ({ block: ipaddr.parseCIDR(r.cidr) as Block, name: r.name }));
const V4 = parsed(IPV4_SPECIAL);
const V6 = parsed(IPV6_SPECIAL);
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3') as Block;

/** The name of the most specific special block holding `addr`; `global` (or `reserved`: v6 outside 2000::/3) otherwise. */
export function rangeOf(addr: ipaddr.IPv4 | ipaddr.IPv6): string {
  let best: { name: string; prefix: number } | null = null;
  for (const { block, name } of addr.kind() === 'ipv4' ? V4 : V6) {
    if (block[0].kind() === addr.kind() && addr.match(block) && (best === null || block[1] > best.prefix)) best = { name, prefix: block[1] };
  }
  if (best) return best.name;
  if (addr.kind() === 'ipv6' && !addr.match(GLOBAL_UNICAST)) return 'reserved';
  return 'global';
}

/**
 * The name for a whole block: that of its addresses when they all share one, else `mixed`
 * (0.0.0.0/0 holds private, loopback and global addresses). A CIDR block either lies inside a
 * registry block or contains it whole, so it is uniform exactly when its first and last
 * addresses agree and no registry block of another name starts strictly inside it.
 */
export function rangeOfBlock(first: ipaddr.IPv4 | ipaddr.IPv6, last: ipaddr.IPv4 | ipaddr.IPv6, block: Block): string {
  const name = rangeOf(first);
  if (rangeOf(last) !== name) return 'mixed';
  const rows = first.kind() === 'ipv4' ? V4 : V6;
  for (const r of rows) {
    if (r.block[1] > block[1] && r.block[0].match(block) && r.name !== name) return 'mixed';
  }
  if (first.kind() === 'ipv6' && GLOBAL_UNICAST[1] > block[1] && GLOBAL_UNICAST[0].match(block)) return 'mixed';
  return name;
}
