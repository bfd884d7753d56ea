import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { rangeOf, rangeOfBlock } from './special-ranges.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** One address or block as read: the address given, and its prefix (32/128 without one). */
interface Parsed {
  addr: Address;
  prefix: number;
}

const bits = (a: Address): number => (a.kind() === 'ipv4' ? 32 : 128);

function toBigInt(a: Address): bigint {
  let n = 0n;
  for (const b of a.toByteArray()) n = (n << 8n) | BigInt(b);
  return n;
}

function fromBigInt(n: bigint, kind: 'ipv4' | 'ipv6'): Address {
  const len = kind === 'ipv4' ? 4 : 16;
  const bytes = new Array<number>(len);
  for (let i = len - 1; i >= 0; i--) {
    bytes[i] = Number(n & 0xffn);
    n >>= 8n;
  }
  return ipaddr.fromByteArray(bytes);
}

/** RFC 5952 text, with the dotted form RFC 5952 §5 recommends for IPv4-mapped addresses. */
function text(a: Address): string {
  if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress()) return `::ffff:${(a as ipaddr.IPv6).toIPv4Address().toString()}`;
  return a.toString();
}

/** Text that is not an address: 422, as for any content that does not parse (docs/contract.md). */
function invalid(field: string, message: string): ToolError {
  return new ToolError('PARSE_ERROR', message, { field });
}

/**
 * Reads `a.b.c.d`, an IPv6 address, or either with `/prefix`. IPv4 must be four decimal parts
 * (no `127.1`, no octal `010.0.0.1`, which inet_aton would read differently from a human).
 * IPv6 text goes through the WHATWG host parser first: ipaddr.js 2.x reads the IPv4-compatible
 * `::1.2.3.4` as if it were IPv4-mapped.
 */
export function parseBlock(raw: string, field: string): Parsed {
  const s = raw.trim();
  const slash = s.indexOf('/');
  const addrText = slash < 0 ? s : s.slice(0, slash);
  const prefixText = slash < 0 ? null : s.slice(slash + 1);
  let addr: Address;
  if (addrText.includes(':')) {
    if (addrText.includes('%')) throw invalid(field, `${field}: IPv6 zone indexes (%eth0) are not supported`);
    let host: string;
    try {
      host = new URL(`http://[${addrText}]/`).hostname.slice(1, -1);
    } catch {
      throw invalid(field, `${field} is not a valid IPv6 address: ${JSON.stringify(addrText.slice(0, 64))}`);
    }
    addr = ipaddr.IPv6.parse(host);
  } else {
    if (!ipaddr.IPv4.isValidFourPartDecimal(addrText)) {
      throw invalid(field, `${field} is not a valid IPv4 address (four decimal parts, e.g. 192.168.1.10) or IPv6 address: ${JSON.stringify(addrText.slice(0, 64))}`);
    }
    addr = ipaddr.IPv4.parse(addrText);
  }
  const max = bits(addr);
  if (prefixText === null) return { addr, prefix: max };
  if (!/^(?:0|[1-9][0-9]{0,2})$/.test(prefixText) || Number(prefixText) > max) {
    throw invalid(field, `${field}: the prefix length must be a whole number 0-${max}, got ${JSON.stringify(prefixText.slice(0, 16))}`);
  }
  return { addr, prefix: Number(prefixText) };
}

/** First and last address of the block, as numbers. */
function bounds(p: Parsed): { first: bigint; last: bigint } {
  const host = BigInt(bits(p.addr) - p.prefix);
  const size = 1n << host;
  const first = (toBigInt(p.addr) >> host) << host;
  return { first, last: first + size - 1n };
}

const Usable = z.object({
  first: z.string().describe('First address a host may use'),
  last: z.string().describe('Last address a host may use'),
  count: z.string().describe('How many (a decimal string)'),
});

const Output = z.object({
  input: z.string().describe('The input as given'),
  version: z.union([z.literal(4), z.literal(6)]).describe('IP version'),
  address: z.string().describe('The address given (host bits kept), normalised (IPv6 as RFC 5952)'),
  network: z.string().describe('The network address: the address with its host bits cleared'),
  prefix: z.number().int().describe('Prefix length (32 or 128 for a single address)'),
  cidr: z.string().describe('network/prefix'),
  netmask: z.string().optional().describe('IPv4: the netmask, e.g. 255.255.255.0'),
  wildcard: z.string().optional().describe('IPv4: the inverse mask (Cisco ACL style), e.g. 0.0.0.255'),
  broadcast: z.string().optional().describe('IPv4 blocks of /30 and larger: the broadcast address (= last)'),
  first: z.string().describe('First address of the block (= network)'),
  last: z.string().describe('Last address of the block'),
  size: z.string().describe('Addresses in the block, as a decimal string (an IPv6 /0 holds 2^128)'),
  usable: Usable.optional().describe('IPv4: host addresses — without network and broadcast, except /31 (RFC 3021: both) and /32 (the one address)'),
  range: z.string().describe(
    'Special-purpose range (IANA registries, RFC 6890): private, loopback, link-local, unique-local, multicast, documentation, carrier-grade-nat, benchmarking, unspecified, broadcast, this-network, reserved, ipv4-mapped, nat64, teredo, 6to4, …; global otherwise; mixed for a block spanning several',
  ),
  contains: z.boolean().optional().describe('With `contains`: whether that address or whole block lies inside this block (false for another IP version)'),
});

export const ipCalc = defineTool({
  name: 'ip_calc',
  title: 'IP / CIDR calculator',
  description:
    'Subnet arithmetic for an IPv4 or IPv6 address or CIDR block: network, prefix, netmask (v4), first and last address, size (a decimal string), usable hosts (v4), the special-purpose range it belongs to (private, loopback, link-local, documentation… per RFC 6890), and whether another address or block lies inside it.',
  input: z.object({
    input: z.string().min(1).max(100).describe('An IPv4 or IPv6 address, or a CIDR block: 192.168.1.10, 10.0.0.0/8, 2001:db8::/32, 192.168.1.10/24 (host bits allowed)'),
    contains: z.string().min(1).max(100).optional().describe('An address or CIDR block to test for membership in `input`'),
  }),
  output: Output,
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'POST', path: '/api/ip-calc' },
  example: { input: '192.168.1.10/24', contains: '192.168.1.200' },
  handler: ({ input, contains }) => {
    const p = parseBlock(input, 'input');
    const kind = p.addr.kind();
    const v4 = kind === 'ipv4';
    const { first, last } = bounds(p);
    const firstAddr = fromBigInt(first, kind);
    const lastAddr = fromBigInt(last, kind);
    const size = last - first + 1n;
    const block: [Address, number] = [firstAddr, p.prefix];
    const out: z.output<typeof Output> = {
      input,
      version: v4 ? 4 : 6,
      address: text(p.addr),
      network: text(firstAddr),
      prefix: p.prefix,
      cidr: `${text(firstAddr)}/${p.prefix}`,
      first: text(firstAddr),
      last: text(lastAddr),
      size: size.toString(),
      range: p.prefix === bits(p.addr) ? rangeOf(p.addr) : rangeOfBlock(firstAddr, lastAddr, block),
    };
    if (v4) {
      const mask = ((1n << 32n) - 1n) ^ ((1n << BigInt(32 - p.prefix)) - 1n);
      out.netmask = fromBigInt(mask, 'ipv4').toString();
      out.wildcard = fromBigInt(((1n << 32n) - 1n) ^ mask, 'ipv4').toString();
      if (p.prefix <= 30) out.broadcast = text(lastAddr);
      out.usable =
        p.prefix >= 31
          ? { first: text(firstAddr), last: text(lastAddr), count: size.toString() }
          : { first: fromBigInt(first + 1n, kind).toString(), last: fromBigInt(last - 1n, kind).toString(), count: (size - 2n).toString() };
    }
    if (contains !== undefined) {
      const c = parseBlock(contains, 'contains');
      if (c.addr.kind() !== kind) out.contains = false;
      else {
        const cb = bounds(c);
        out.contains = c.prefix >= p.prefix && cb.first >= first && cb.last <= last;
      }
    }
    return out;
  },
});
