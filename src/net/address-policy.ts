/**
 * Which targets the guarded fetcher may reach: the URL rules (scheme, credentials, port, host
 * name, literal IP) and the address rule, with every IPv6 spelling normalised before it is judged.
 * docs/fetching.md ("Policy" and "Addresses") is the reference.
 */
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { ToolError } from '../errors.js';

/** One message for every refused address, whether it came from a literal or from DNS. */
export const MSG_BLOCKED = 'The URL points to an address that is not allowed (private, loopback, link-local or otherwise non-public)';

/** The Fetch standard's "bad ports": services that must never be spoken to in HTTP. */
const BAD_PORTS = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111,
  113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554,
  556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666,
  6667, 6668, 6669, 6679, 6697, 10080,
]);

const GLOBAL_UNICAST = ipaddr.IPv6.parse('2000::');
const IETF_PROTOCOL_ASSIGNMENTS = ipaddr.IPv6.parse('2001::');
const NAT64_WELL_KNOWN = ipaddr.IPv6.parse('64:ff9b::');

function stripBrackets(address: string): string {
  return address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
}

/**
 * Parses an IP address the way the network stack reads it, or null. IPv4 must be a dotted quad
 * (what resolvers and WHATWG URLs produce); IPv6 is first re-serialised by the WHATWG URL parser,
 * because ipaddr.js 2.x reads the IPv4-compatible `::127.0.0.1` as if it were IPv4-mapped
 * `::ffff:127.0.0.1` while the stack connects to `::7f00:1`. Addresses with a zone id
 * (`fe80::1%eth0`) are scoped, hence never public: null.
 */
export function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const text = stripBrackets(address);
  const family = net.isIP(text);
  try {
    if (family === 4) return ipaddr.IPv4.parse(text);
    if (family === 6 && !text.includes('%')) return ipaddr.IPv6.parse(new URL(`http://[${text}]/`).hostname.slice(1, -1));
  } catch {
    // Not an address after all.
  }
  return null;
}

/**
 * The IPv4 address an IPv6 address stands for, when the policy judges it by that address:
 * IPv4-mapped `::ffff:a.b.c.d` (what dual-stack sockets report) and the NAT64 well-known prefix
 * `64:ff9b::a.b.c.d` (what DNS64 answers on IPv6-only networks). Every other embedding
 * (IPv4-compatible `::a.b.c.d`, SIIT `::ffff:0:a.b.c.d`, 6to4, Teredo, local-use NAT64) is
 * refused outright by `isPublicAddress`, whatever it carries.
 */
function carriedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4 | null {
  if (addr.isIPv4MappedAddress()) return addr.toIPv4Address();
  if (addr.match(NAT64_WELL_KNOWN, 96)) {
    const b = addr.toByteArray();
    return new ipaddr.IPv4([b[12]!, b[13]!, b[14]!, b[15]!]);
  }
  return null;
}

/**
 * True when `address` is a public unicast address:
 * - IPv4: ipaddr.js `range() === 'unicast'` (no loopback, private, link-local, CGNAT,
 *   unspecified, multicast, broadcast, reserved, documentation, benchmarking ranges);
 * - IPv4-mapped and NAT64 well-known-prefix IPv6: judged as the IPv4 address they carry;
 * - other IPv6: inside global unicast 2000::/3, outside the IETF protocol assignments
 *   2001::/23 (Teredo, benchmarking, ORCHID, …) and `range() === 'unicast'` (no 6to4,
 *   documentation). So ::/8 (IPv4-compatible `::a.b.c.d`, SIIT), 64:ff9b:1::/48, unique-local,
 *   link-local, site-local and multicast are all refused.
 * Anything unparsable is not public.
 */
export function isPublicAddress(address: string): boolean {
  const addr = parseAddress(address);
  if (addr === null) return false;
  if (addr.kind() === 'ipv4') return addr.range() === 'unicast';
  const v6 = addr as ipaddr.IPv6;
  const v4 = carriedIPv4(v6);
  if (v4 !== null) return v4.range() === 'unicast';
  return v6.match(GLOBAL_UNICAST, 3) && !v6.match(IETF_PROTOCOL_ASSIGNMENTS, 23) && v6.range() === 'unicast';
}

/** A comparable key for an address (IPv4-mapped IPv6 keyed as its IPv4), or null. */
export function addressKey(address: string): string | null {
  const addr = parseAddress(address);
  if (addr === null) return null;
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) return (addr as ipaddr.IPv6).toIPv4Address().toString();
  return addr.toNormalizedString();
}

/** `localhost`, `*.localhost` (RFC 6761: always loopback), with or without the final dot. */
export function isLocalhostName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

/** Who may be reached: everything (FETCH_ALLOW_PRIVATE) or public addresses plus exemptions. */
export interface TargetPolicy {
  /** True: private and loopback addresses and `localhost` are allowed (tests, local use). */
  allowPrivate: boolean;
  /** Addresses allowed although not public (tests: one loopback fixture). */
  allowAddresses?: readonly string[];
}

/** Builds the address check used by `checkTargetUrl` and at connect time. */
export function addressChecker(policy: TargetPolicy): (address: string) => boolean {
  if (policy.allowPrivate) return (address) => net.isIP(stripBrackets(address)) !== 0;
  const exempt = new Set((policy.allowAddresses ?? []).map(addressKey).filter((k): k is string => k !== null));
  return (address) => {
    const key = addressKey(address);
    return key !== null && (exempt.has(key) || isPublicAddress(address));
  };
}

/**
 * Checks a URL without any I/O: http(s) only, no credentials, no bad port, no `localhost` name
 * and no literal IP outside the policy. Host names are otherwise judged when they are resolved.
 * Returns the parsed URL; throws ToolError INVALID_INPUT (not a URL) or URL_NOT_ALLOWED, with the
 * fetcher's own messages. For URLs stored now and fetched later (webhook callbacks).
 */
export function checkTargetUrl(raw: string | URL, policy: TargetPolicy | ((address: string) => boolean)): URL {
  const allowed = typeof policy === 'function' ? policy : addressChecker(policy);
  let url: URL;
  try {
    url = new URL(String(raw));
  } catch {
    throw new ToolError('INVALID_INPUT', 'Not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ToolError('URL_NOT_ALLOWED', 'Only http and https URLs can be fetched');
  if (url.username || url.password) throw new ToolError('URL_NOT_ALLOWED', 'URLs with credentials (user:password@) are not allowed');
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  if (BAD_PORTS.has(port)) throw new ToolError('URL_NOT_ALLOWED', `Port ${port} is not allowed`);
  // WHATWG parsing has already normalised 2130706434, 0177.0.0.2 and 0x7f.0.0.2 to 127.0.0.2.
  const host = stripBrackets(url.hostname);
  if (net.isIP(host) !== 0 ? !allowed(host) : isLocalhostName(host) && !allowed('127.0.0.1')) {
    throw new ToolError('URL_NOT_ALLOWED', MSG_BLOCKED);
  }
  return url;
}
