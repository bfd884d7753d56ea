import { describe, expect, it } from 'vitest';
import { clientAddress, expandIPv6, limitAddress, TrustedProxies } from './ip.js';

describe('limitAddress (who a keyless call is counted under)', () => {
  it('unwraps IPv4-mapped addresses, and two mapped addresses stay two callers', () => {
    expect(limitAddress('::ffff:203.0.113.5')).toBe('203.0.113.5');
    expect(limitAddress('::FFFF:198.51.100.7')).toBe('198.51.100.7');
    expect(limitAddress('::ffff:cb00:7105')).toBe('203.0.113.5');
    expect(limitAddress('0:0:0:0:0:ffff:203.0.113.6')).toBe('203.0.113.6');
    expect(limitAddress('::ffff:203.0.113.5')).not.toBe(limitAddress('::ffff:203.0.113.6'));
    expect(limitAddress('203.0.113.5')).toBe('203.0.113.5');
  });

  it('groups IPv6 by /64', () => {
    expect(limitAddress('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:1:2::/64');
    expect(limitAddress('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(limitAddress('2001:0DB8:0001:0002:0:0:0:ffff')).toBe('2001:db8:1:2::/64');
    expect(limitAddress('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(limitAddress('fe80::1%eth0')).toBe('fe80::/64');
    expect(limitAddress('::1')).toBe('::/64');
    expect(limitAddress('[2001:db8::5]')).toBe('2001:db8::/64');
  });

  it('keeps what is not an address as it is', () => {
    expect(limitAddress('local')).toBe('local');
    expect(limitAddress('')).toBe('');
  });

  it('expands IPv6 with dotted tails and ::', () => {
    expect(expandIPv6('::')).toStrictEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(expandIPv6('1::')).toStrictEqual([1, 0, 0, 0, 0, 0, 0, 0]);
    expect(expandIPv6('64:ff9b::192.0.2.33')).toStrictEqual([0x64, 0xff9b, 0, 0, 0, 0, 0xc000, 0x221]);
  });
});

describe('clientAddress (X-Forwarded-For only from trusted proxies)', () => {
  const none = new TrustedProxies([]);
  const proxies = new TrustedProxies(['10.0.0.1', '192.168.0.0/16', 'fd00::/8']);

  it('ignores X-Forwarded-For from an untrusted peer', () => {
    expect(clientAddress('198.51.100.1', '203.0.113.9', none)).toBe('198.51.100.1');
    expect(clientAddress('198.51.100.1', '203.0.113.9', proxies)).toBe('198.51.100.1');
  });

  it('takes the right-most untrusted hop behind a trusted proxy (the left part is client-chosen)', () => {
    expect(clientAddress('10.0.0.1', '203.0.113.9', proxies)).toBe('203.0.113.9');
    expect(clientAddress('::ffff:10.0.0.1', '1.2.3.4, 203.0.113.9', proxies)).toBe('203.0.113.9');
    expect(clientAddress('10.0.0.1', '1.2.3.4, 203.0.113.9, 192.168.4.4', proxies)).toBe('203.0.113.9');
    expect(clientAddress('fd12::1', '[2001:db8::7]:443', proxies)).toBe('2001:db8::7');
    expect(clientAddress('10.0.0.1', '203.0.113.9:5555', proxies)).toBe('203.0.113.9');
  });

  it('falls back to the peer on garbage or an all-proxy chain', () => {
    expect(clientAddress('10.0.0.1', 'not-an-ip', proxies)).toBe('10.0.0.1');
    expect(clientAddress('10.0.0.1', '192.168.1.1', proxies)).toBe('10.0.0.1');
    expect(clientAddress('10.0.0.1', '', proxies)).toBe('10.0.0.1');
    expect(clientAddress('10.0.0.1', undefined, proxies)).toBe('10.0.0.1');
  });

  it('refuses a TRUSTED_PROXIES entry that is not an address', () => {
    expect(() => new TrustedProxies(['proxy.example'])).toThrow(/TRUSTED_PROXIES/);
    expect(() => new TrustedProxies(['10.0.0.0/33'])).toThrow(/prefix/);
  });
});
