import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ToolError } from '../errors.js';
import { startFixture } from '../../test/fixtures/media/servers.js';
import { addressChecker, checkTargetUrl, isPublicAddress, parseAddress } from './address-policy.js';
import { createFetcher } from './fetch.js';

const BLOCKED_MSG = 'The URL points to an address that is not allowed (private, loopback, link-local or otherwise non-public)';
const BASE = { fetchAllowPrivate: false, fetchTimeoutMs: 5_000, fetchMaxBytes: 1024 * 1024 };

/** The code a synchronous check throws, or 'ok'. */
function verdict(check: () => unknown): string {
  try {
    check();
    return 'ok';
  } catch (err) {
    if (err instanceof ToolError) return `${err.code}${err.message === BLOCKED_MSG ? ' (blocked)' : `: ${err.message}`}`;
    throw err;
  }
}

const strictUrl = (u: string) => verdict(() => checkTargetUrl(u, { allowPrivate: false }));
const permissiveUrl = (u: string) => verdict(() => checkTargetUrl(u, { allowPrivate: true }));

/** 16-bit groups of an IPv6 address carrying `v4` (four octets) in its last 32 bits. */
const tail = (o: number[]) => `${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;

describe('isPublicAddress: every IPv6 form is normalised before it is judged', () => {
  it('regression: IPv4-compatible ::127.0.0.1 (serialised ::7f00:1) passed the address check', () => {
    // ipaddr.js 2.x reads '::127.0.0.1' as '::ffff:127.0.0.1'; the stack connects to ::7f00:1.
    expect(parseAddress('::127.0.0.1')?.toNormalizedString()).toBe('0:0:0:0:0:0:7f00:1');
    expect(['::7f00:1', '::127.0.0.1', '[::7f00:1]', '::0:127.0.0.1'].map(isPublicAddress)).toStrictEqual([false, false, false, false]);
    expect(strictUrl('http://[::127.0.0.1]/')).toBe('URL_NOT_ALLOWED (blocked)');
  });

  it('judges IPv4-mapped and NAT64 (64:ff9b::/96) by the IPv4 they carry; refuses the other embeddings outright', () => {
    const cases: Record<string, boolean> = {
      // plain
      '8.8.8.8': true,
      '2606:4700::1111': true,
      '2001:4860:4860::8888': true,
      '[2606:4700::1111]': true,
      // IPv4-mapped ::ffff:0:0/96
      '::ffff:8.8.8.8': true,
      '::ffff:808:808': true,
      '::ffff:127.0.0.1': false,
      '::ffff:a9fe:a9fe': false,
      // IPv4-compatible ::a.b.c.d and the rest of ::/8, whatever they carry
      '::8.8.8.8': false,
      '::808:808': false,
      '::ffff:0:808:808': false, // SIIT (IPv4-translated)
      '::ffff:0:127.0.0.1': false,
      '::1': false,
      '::': false,
      // NAT64 well-known prefix: judged by the IPv4 inside
      '64:ff9b::8.8.8.8': true,
      '64:ff9b::808:808': true,
      '64:ff9b::7f00:1': false,
      '64:ff9b::10.0.0.1': false,
      '64:ff9b::169.254.169.254': false,
      '64:ff9b::100.64.0.1': false,
      // local-use NAT64 (RFC 8215), 6to4, Teredo: refused whatever they carry
      '64:ff9b:1::808:808': false,
      '2002:808:808::1': false,
      '2002:7f00:1::1': false,
      '2002:a9fe:a9fe::': false,
      '2001:0:4136:e378:8000:63bf:3fff:fdd2': false,
      '2001::': false,
      // IETF protocol assignments 2001::/23, documentation, outside 2000::/3
      '2001:2::1': false,
      '2001:4:112::1': false,
      '2001:db8::1': false,
      '3fff::1': false,
      '4000::1': false,
      '100::1': false,
      '5f00::1': false,
      'fec0::1': false,
      'fc00::1': false,
      'fe80::1': false,
      'fe80::1%eth0': false,
      'ff05::1': false,
      // IPv4 spellings a resolver never produces are not addresses here
      '127.1': false,
      '2130706433': false,
      '0x7f000001': false,
    };
    const got = Object.fromEntries(Object.keys(cases).map((k) => [k, isPublicAddress(k)]));
    expect(got).toStrictEqual(cases);
  });

  it('fuzz: a non-public IPv4 is refused inside every IPv6 embedding', () => {
    const privateV4 = fc.oneof(
      fc.tuple(fc.constant(127), fc.nat(255), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(10), fc.nat(255), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(192), fc.constant(168), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(169), fc.constant(254), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(100), fc.integer({ min: 64, max: 127 }), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(0), fc.nat(255), fc.nat(255), fc.nat(255)),
    );
    const forms = [
      (o: number[]) => `::${o.join('.')}`,
      (o: number[]) => `::${tail(o)}`,
      (o: number[]) => `::ffff:${o.join('.')}`,
      (o: number[]) => `::ffff:${tail(o)}`,
      (o: number[]) => `0:0:0:0:0:ffff:${tail(o)}`,
      (o: number[]) => `::ffff:0:${o.join('.')}`,
      (o: number[]) => `64:ff9b::${o.join('.')}`,
      (o: number[]) => `64:ff9b:0:0:0:0:${tail(o)}`,
      (o: number[]) => `64:ff9b:1::${tail(o)}`,
      (o: number[]) => `2002:${tail(o)}::1`,
      (o: number[]) => `2001:0:4136:e378:8000:63bf:${tail(o.map((x) => 255 - x))}`,
    ];
    fc.assert(
      fc.property(privateV4, fc.integer({ min: 0, max: forms.length - 1 }), (o, i) => {
        const literal = forms[i]!(o);
        return !isPublicAddress(literal) && strictUrl(`http://[${literal}]/`) === 'URL_NOT_ALLOWED (blocked)';
      }),
      { numRuns: 500 },
    );
  });

  it('exempt addresses match their IPv4-mapped form only, not an IPv4-compatible one', () => {
    const allowed = addressChecker({ allowPrivate: false, allowAddresses: ['127.0.0.1'] });
    expect(['127.0.0.1', '::ffff:127.0.0.1', '::7f00:1', '::127.0.0.1', '127.0.0.2'].map(allowed)).toStrictEqual([true, true, false, false, false]);
  });
});

describe('checkTargetUrl: the synchronous check for stored URLs', () => {
  it('refuses localhost and *.localhost unless private addresses are allowed', () => {
    const urls = ['http://localhost/', 'http://LOCALHOST.:8080/x', 'https://api.localhost/', 'http://a.b.localhost/', 'http://localhost.example.com/', 'http://mylocalhost/'];
    expect(urls.map(strictUrl)).toStrictEqual([
      'URL_NOT_ALLOWED (blocked)',
      'URL_NOT_ALLOWED (blocked)',
      'URL_NOT_ALLOWED (blocked)',
      'URL_NOT_ALLOWED (blocked)',
      'ok', // other host names are judged when resolved
      'ok',
    ]);
    expect(urls.map(permissiveUrl)).toStrictEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'ok']);
  });

  it('refuses private literals in every spelling and keeps the scheme, credential and port rules when private is allowed', () => {
    const urls = ['http://127.0.0.1:8080/', 'http://[::127.0.0.1]/', 'http://[64:ff9b::10.0.0.1]/', 'http://[2002:7f00:1::]/', 'http://0x7f.1/', 'http://[64:ff9b::8.8.8.8]/'];
    expect(urls.map(strictUrl)).toStrictEqual([...Array(5).fill('URL_NOT_ALLOWED (blocked)'), 'ok']);
    expect(urls.map(permissiveUrl)).toStrictEqual(Array(6).fill('ok'));
    expect(['ftp://localhost/', 'http://u:p@localhost/', 'http://localhost:25/', 'nope'].map(permissiveUrl)).toStrictEqual([
      'URL_NOT_ALLOWED: Only http and https URLs can be fetched',
      'URL_NOT_ALLOWED: URLs with credentials (user:password@) are not allowed',
      'URL_NOT_ALLOWED: Port 25 is not allowed',
      'INVALID_INPUT: Not a valid absolute URL',
    ]);
  });
});

describe('fetcher: IPv4-compatible and other embedded addresses never reach the network', () => {
  it('regression: http://[::127.0.0.1]/ was let through to connect (502) instead of refused (400)', async () => {
    const fixture = await startFixture({ '/': (_q, res) => void res.end('hi') });
    const f = createFetcher(BASE);
    const failure = await f.fetch(`http://[::127.0.0.1]:${fixture.port}/`).then(
      () => null,
      (e: unknown) => (e instanceof ToolError ? { code: e.code, message: e.message } : e),
    );
    expect(failure).toStrictEqual({ code: 'URL_NOT_ALLOWED', message: BLOCKED_MSG });
    expect(fixture.hits).toBe(0);
    await Promise.all([f.close(), fixture.close()]);
  });

  it('a resolver answering the IPv4-compatible form (as inet_ntop prints ::7f00:1) is refused before connecting', async () => {
    const fixture = await startFixture({ '/': (_q, res) => void res.end('hi') });
    const answers: Record<string, string> = { 'compat.test': '::127.0.0.1', 'nat64.test': '64:ff9b::7f00:1', 'sixtofour.test': '2002:7f00:1::1' };
    const f = createFetcher(BASE, { allowAddresses: ['127.0.0.1'], resolver: async (h) => [{ address: answers[h] ?? '192.0.2.1', family: 6 }] });
    const got = await Promise.all(
      Object.keys(answers).map((h) =>
        f.fetch(`http://${h}:${fixture.port}/`).then(
          () => 'fetched',
          (e: unknown) => (e instanceof ToolError ? e.code : String(e)),
        ),
      ),
    );
    expect(got).toStrictEqual(['URL_NOT_ALLOWED', 'URL_NOT_ALLOWED', 'URL_NOT_ALLOWED']);
    expect(fixture.hits).toBe(0);
    await Promise.all([f.close(), fixture.close()]);
  });
});
