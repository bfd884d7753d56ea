// Issue 34: the security tools against independent vectors — FIPS 180-4 / FIPS 202 / RFC 1321 /
// RFC 7693 digests, RFC 4231 HMACs, RFC 7515 §A.1 / RFC 7519 §3.1 JWT, RFC 9562 appendix A UUIDs,
// the ULID spec's example, and certificates and JWTs made here by the `openssl` command line.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../src/core/clock.js';
import { certDecode } from '../src/tools/security/cert-decode.js';
import { encode } from '../src/tools/security/encode.js';
import { hash } from '../src/tools/security/hash.js';
import { idGenerate, idInspect } from '../src/tools/security/id-tools.js';
import { jwtDecode } from '../src/tools/security/jwt-decode.js';
import { tempDir, useToolHarness } from './harness.js';

const clock = manualClock('2011-03-22T18:00:00Z');
const h = useToolHarness({ clock });

const hexOf = async (input: Record<string, unknown>) => {
  const r = (await h.call(hash, input)) as { digests: Record<string, { hex: string; base64: string }> };
  return Object.fromEntries(Object.entries(r.digests).map(([k, v]) => [k, v.hex]));
};

describe('hash: FIPS 180-4, FIPS 202, RFC 1321 and RFC 7693 examples', () => {
  it('"abc" in every algorithm, with hex and base64 of the same bytes', async () => {
    const r = (await h.call(hash, { input: 'abc', algorithms: ['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512', 'sha3-256', 'sha3-512', 'blake2b512'] })) as {
      digests: Record<string, { hex: string; base64: string }>;
      bytes: number;
      hmac: boolean;
    };
    expect(Object.fromEntries(Object.entries(r.digests).map(([k, v]) => [k, v.hex]))).toStrictEqual({
      md5: '900150983cd24fb0d6963f7d28e17f72',
      sha1: 'a9993e364706816aba3e25717850c26c9cd0d89d',
      sha224: '23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7',
      sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      sha384: 'cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7',
      sha512: 'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f',
      'sha3-256': '3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532',
      'sha3-512': 'b751850b1a57168a5693cd924b6b096e08f621827444f70d884f5d0240d2712e10e116e9192af3c91a7ec57647e3934057340b4cf408d5a56592f8274eec53f0',
      blake2b512: 'ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923',
    });
    expect(r.digests['sha256']!.base64).toBe('ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=');
    expect([r.bytes, r.hmac]).toStrictEqual([3, false]);
  });

  it('the empty string, the 448-bit message, and the same bytes given as hex and base64', async () => {
    expect(await hexOf({ input: '', algorithms: ['md5', 'sha256', 'sha3-256'] })).toStrictEqual({
      md5: 'd41d8cd98f00b204e9800998ecf8427e',
      sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      'sha3-256': 'a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a',
    });
    const msg = 'abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq';
    const want = { sha256: '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1' };
    expect(await hexOf({ input: msg })).toStrictEqual(want);
    expect(await hexOf({ input: Buffer.from(msg).toString('hex'), input_encoding: 'hex' })).toStrictEqual(want);
    expect(await hexOf({ input: Buffer.from(msg).toString('base64'), input_encoding: 'base64' })).toStrictEqual(want);
  });

  it('RFC 4231 HMAC test cases 1, 2 and 6 (a key longer than the block)', async () => {
    expect(await hexOf({ input: 'Hi There', hmac_key: '0b'.repeat(20), hmac_key_encoding: 'hex', algorithms: ['sha224', 'sha256', 'sha384', 'sha512'] })).toStrictEqual({
      sha224: '896fb1128abbdf196832107cd49df33f47b4b1169912ba4f53684b22',
      sha256: 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7',
      sha384: 'afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59cfaea9ea9076ede7f4af152e8b2fa9cb6',
      sha512: '87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854',
    });
    expect(await hexOf({ input: 'what do ya want for nothing?', hmac_key: 'Jefe', algorithms: ['sha256', 'sha512'] })).toStrictEqual({
      sha256: '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
      sha512: '164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737',
    });
    expect(await hexOf({ input: 'Test Using Larger Than Block-Size Key - Hash Key First', hmac_key: Buffer.alloc(131, 0xaa).toString('base64'), hmac_key_encoding: 'base64' })).toStrictEqual({
      sha256: '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54',
    });
  });

  it('refuses bytes that are not what their encoding says (400, never other bytes)', async () => {
    for (const [input, input_encoding] of [['abc', 'hex'], ['zz', 'hex'], ['ab$d', 'base64'], ['abcde', 'base64']] as const) {
      expect((await h.failure(hash, { input, input_encoding })).code, input).toBe('INVALID_INPUT');
    }
    expect((await h.failure(hash, { input: 'x', algorithms: ['md4'] })).code).toBe('INVALID_INPUT');
  });
});

describe('encode', () => {
  const run = (input: Record<string, unknown>) => h.call(encode, input);

  it('RFC 4648 §10 test vectors, each codec both ways', async () => {
    const vectors: Array<[string, string, string]> = [
      ['', '', ''],
      ['f', 'Zg==', '66'],
      ['fo', 'Zm8=', '666f'],
      ['foo', 'Zm9v', '666f6f'],
      ['foob', 'Zm9vYg==', '666f6f62'],
      ['fooba', 'Zm9vYmE=', '666f6f6261'],
      ['foobar', 'Zm9vYmFy', '666f6f626172'],
    ];
    for (const [text, b64, hex] of vectors) {
      expect(await run({ input: text })).toStrictEqual({ result: b64, bytes: text.length });
      expect(await run({ input: text, codec: 'hex' })).toStrictEqual({ result: hex, bytes: text.length });
      expect(await run({ input: b64, action: 'decode' })).toStrictEqual({ result: text, is_utf8: true, bytes: text.length });
      expect(await run({ input: hex.toUpperCase(), action: 'decode', codec: 'hex' })).toStrictEqual({ result: text, is_utf8: true, bytes: text.length });
    }
  });

  it('base64url and percent-encoding (RFC 3986 unreserved kept, UTF-8 bytes escaped)', async () => {
    expect(await run({ input: '+/8=', input_encoding: 'base64', codec: 'base64url' })).toStrictEqual({ result: '-_8', bytes: 2 });
    expect(await run({ input: 'a b&c=d/é~', codec: 'url' })).toStrictEqual({ result: 'a%20b%26c%3Dd%2F%C3%A9~', bytes: 11 });
    expect(await run({ input: 'a%20b%26c%3dd%2F%C3%A9~+', action: 'decode', codec: 'url' })).toStrictEqual({ result: 'a b&c=d/é~+', is_utf8: true, bytes: 12 });
  });

  it('bytes that are not UTF-8 come back as base64 with is_utf8 false', async () => {
    expect(await run({ input: '/+79AA==', action: 'decode' })).toStrictEqual({ result_base64: '/+79AA==', is_utf8: false, bytes: 4 });
    expect(await run({ input: '%FF%FE', action: 'decode', codec: 'url' })).toStrictEqual({ result_base64: '//4=', is_utf8: false, bytes: 2 });
  });

  it('gzip_base64: decodes what the gzip command made; round-trips', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'x.txt'), 'hello gzip\n');
    const gz = execFileSync('gzip', ['-c', path.join(dir, 'x.txt')]).toString('base64');
    expect(await run({ input: gz, action: 'decode', codec: 'gzip_base64' })).toStrictEqual({ result: 'hello gzip\n', is_utf8: true, bytes: 11 });
    const enc = (await run({ input: 'round trip', codec: 'gzip_base64' })) as { result: string };
    expect(execFileSync('gzip', ['-dc'], { input: Buffer.from(enc.result, 'base64') }).toString()).toBe('round trip');
  });

  it('hostile: a gzip bomb stops at the output bound (413), bad input is a 4xx', async () => {
    const bomb = execFileSync('gzip', ['-c'], { input: Buffer.alloc(64 * 1024 * 1024) }).toString('base64');
    expect(bomb.length).toBeLessThan(200_000);
    expect(await h.failure(encode, { input: bomb, action: 'decode', codec: 'gzip_base64' })).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
    expect(await h.failure(encode, { input: 'bm90IGd6aXA=', action: 'decode', codec: 'gzip_base64' })).toMatchObject({ status: 422, code: 'PARSE_ERROR' });
    expect(await h.failure(encode, { input: '%E', action: 'decode', codec: 'url' })).toMatchObject({ status: 422, code: 'PARSE_ERROR' });
    expect(await h.failure(encode, { input: 'a_b', action: 'decode', codec: 'base64' })).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
    expect(await h.failure(encode, { input: 'x'.repeat(1_048_577) })).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
  });
});

// RFC 7515 §A.1 (the JWT of RFC 7519 §3.1) and its HMAC key.
const A1 =
  'eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const A1_KEY = { kty: 'oct', k: 'AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow' };

describe('jwt_decode: RFC 7515 §A.1 / RFC 7519 §3.1', () => {
  const decoded = {
    header: { typ: 'JWT', alg: 'HS256' },
    payload: { iss: 'joe', exp: 1300819380, 'http://example.com/is_root': true },
    expires_at: '2011-03-22T18:43:00.000Z',
    issued_at: null,
    not_before: null,
    not_yet_valid: null,
    warnings: [],
  };

  it('verifies with the JWK, or the same key as a base64url secret, before exp; expired after', async () => {
    clock.t = Date.parse('2011-03-22T18:00:00Z');
    const ok = { ...decoded, verified: true, signature_valid: true, expired: false, errors: [] };
    expect(await h.call(jwtDecode, { token: A1, public_key: JSON.stringify(A1_KEY) })).toStrictEqual(ok);
    expect(await h.call(jwtDecode, { token: A1, secret: A1_KEY.k, secret_encoding: 'base64' })).toStrictEqual(ok);
    expect(await h.call(jwtDecode, { token: A1, secret: A1_KEY.k, secret_encoding: 'base64', audience: 'x', issuer: 'joe' })).toStrictEqual({ ...ok, verified: false, errors: ['audience_mismatch'] });
    clock.t = Date.parse('2011-03-22T18:43:00Z');
    expect(await h.call(jwtDecode, { token: A1, secret: A1_KEY.k, secret_encoding: 'base64' })).toStrictEqual({ ...ok, verified: false, expired: true, errors: ['expired'] });
    expect(await h.call(jwtDecode, { token: A1, secret: A1_KEY.k, secret_encoding: 'base64', clock_tolerance_s: 1 })).toStrictEqual(ok);
  });

  it('a wrong key or a changed payload does not verify; no key: verified is null', async () => {
    clock.t = Date.parse('2011-03-22T18:00:00Z');
    expect(await h.call(jwtDecode, { token: A1, secret: 'not the key' })).toMatchObject({ verified: false, signature_valid: false, errors: ['signature_invalid'] });
    const [hd, , sig] = A1.split('.');
    const forged = `${hd}.${Buffer.from('{"iss":"joe","exp":1300819380,"http://example.com/is_root":false}').toString('base64url')}.${sig}`;
    expect(await h.call(jwtDecode, { token: forged, public_key: JSON.stringify(A1_KEY) })).toMatchObject({ verified: false, errors: ['signature_invalid'] });
    expect(await h.call(jwtDecode, { token: A1 })).toStrictEqual({ ...decoded, verified: null, signature_valid: null, expired: false, errors: [] });
  });
});

/** RS256 and ES256 JWTs signed by the openssl command line (not jose), and their public keys. */
function opensslTokens(): { rs: string; es: string; rsPub: string; esPub: string } {
  const dir = tempDir();
  const f = (n: string) => path.join(dir, n);
  execFileSync('openssl', ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', f('rsa.pem')], { stdio: 'pipe' });
  execFileSync('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', f('ec.pem')], { stdio: 'pipe' });
  const pub = (k: string) => execFileSync('openssl', ['pkey', '-in', f(k), '-pubout']).toString();
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const payload = b64({ sub: 'openssl', iat: 1300000000, nbf: 1300000000, exp: 4102444800, aud: ['a', 'b'], iss: 'me' });
  const sign = (alg: string, key: string, raw: (der: Buffer) => Buffer) => {
    const input = `${b64({ alg, typ: 'JWT' })}.${payload}`;
    fs.writeFileSync(f('in'), input);
    return `${input}.${raw(execFileSync('openssl', ['dgst', '-sha256', '-sign', f(key), f('in')])).toString('base64url')}`;
  };
  // ECDSA: openssl writes DER SEQUENCE{r, s}; JWS wants r ‖ s, 32 bytes each (RFC 7518 §3.4).
  const rs32 = (der: Buffer) => {
    const ints: Buffer[] = [];
    for (let i = 2; ints.length < 2; ) {
      const len = der[i + 1]!;
      ints.push(der.subarray(i + 2, i + 2 + len));
      i += 2 + len;
    }
    return Buffer.concat(ints.map((n) => Buffer.concat([Buffer.alloc(32), n]).subarray(-32)));
  };
  return { rs: sign('RS256', 'rsa.pem', (d) => d), es: sign('ES256', 'ec.pem', rs32), rsPub: pub('rsa.pem'), esPub: pub('ec.pem') };
}

describe('jwt_decode: RS256 / ES256 signed by openssl', () => {
  const k = opensslTokens();

  it('verifies each with its PEM public key and checks aud, iss, nbf', async () => {
    clock.t = Date.parse('2026-11-26T00:00:00Z');
    for (const [token, key] of [[k.rs, k.rsPub], [k.es, k.esPub]] as const) {
      expect(await h.call(jwtDecode, { token, public_key: key, audience: 'b', issuer: 'me' })).toMatchObject({ verified: true, signature_valid: true, expired: false, not_yet_valid: false, issued_at: '2011-03-13T07:06:40.000Z', errors: [] });
    }
    clock.t = Date.parse('2011-01-01T00:00:00Z');
    expect(await h.call(jwtDecode, { token: k.rs, public_key: k.rsPub })).toMatchObject({ verified: false, signature_valid: true, not_yet_valid: true, errors: ['not_yet_valid'] });
  });

  it('algorithm confusion: the other key, a public key as an HMAC secret, and alg none never verify', async () => {
    clock.t = Date.parse('2026-11-26T00:00:00Z');
    expect(await h.call(jwtDecode, { token: k.rs, public_key: k.esPub })).toMatchObject({ verified: false, errors: ['key_mismatch'] });
    expect(await h.call(jwtDecode, { token: k.es, public_key: k.rsPub })).toMatchObject({ verified: false, errors: ['key_mismatch'] });
    // An HS256 token MACed with the RSA public key's PEM text: a classic confusion attack.
    const { createHmac } = await import('node:crypto');
    const input = `${Buffer.from('{"alg":"HS256"}').toString('base64url')}.${k.rs.split('.')[1]}`;
    const confused = `${input}.${createHmac('sha256', k.rsPub).update(input).digest('base64url')}`;
    expect(await h.call(jwtDecode, { token: confused, public_key: k.rsPub })).toMatchObject({ verified: false, signature_valid: false, errors: ['alg_not_allowed'] });
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${k.rs.split('.')[1]}.`;
    for (const key of [{}, { public_key: k.rsPub }, { secret: 'x' }]) {
      expect(await h.call(jwtDecode, { token: none, ...key })).toMatchObject({ verified: false, signature_valid: false, errors: ['alg_none'] });
    }
  });

  it('refuses what is not a JWT (422) and two keys at once (400)', async () => {
    expect(await h.failure(jwtDecode, { token: 'abc' })).toMatchObject({ status: 422, code: 'PARSE_ERROR' });
    expect(await h.failure(jwtDecode, { token: 'a.b.c.d.e' })).toMatchObject({ status: 422, code: 'PARSE_ERROR' });
    expect(await h.failure(jwtDecode, { token: '!!.??.x' })).toMatchObject({ status: 422, code: 'PARSE_ERROR' });
    expect(await h.failure(jwtDecode, { token: A1, secret: 'a', public_key: k.rsPub })).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
    expect(await h.failure(jwtDecode, { token: A1, public_key: 'not a key' })).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
    expect(await h.failure(jwtDecode, { token: A1, secret: 'zz!', secret_encoding: 'hex' })).toMatchObject({ status: 400, code: 'INVALID_INPUT', message: 'secret is not valid hex (an even number of 0-9a-f digits)' });
    expect(await h.failure(jwtDecode, { token: 'x'.repeat(65_537) })).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
    const deep = `${Buffer.from('{"alg":"HS256"}').toString('base64url')}.${Buffer.from(`{"a":${'['.repeat(20_000)}${']'.repeat(20_000)}}`).toString('base64url')}.x`;
    expect(await h.failure(jwtDecode, { token: deep })).toMatchObject({ status: 422, code: 'PARSE_ERROR', message: 'JWT claims nested deeper than 256' });
  });
});

describe('ids: RFC 9562 appendix A and the ULID spec', () => {
  const inspect = (value: string) => h.call(idInspect, { value });
  const t = { timestamp: '2022-02-22T19:22:22.000Z', unix_ms: 1645557742000 };

  it('reads the time of the v1, v6 and v7 examples (A.1, A.5, A.6) and the v4 example (A.3)', async () => {
    expect(await inspect('C232AB00-9414-11EC-B3C8-9F6BDECED846')).toStrictEqual({ valid: true, kind: 'uuid', canonical: 'c232ab00-9414-11ec-b3c8-9f6bdeced846', version: 1, variant: 'rfc9562', ...t });
    expect(await inspect('urn:uuid:1EC9414C-232A-6B00-B3C8-9F6BDECED846')).toStrictEqual({ valid: true, kind: 'uuid', canonical: '1ec9414c-232a-6b00-b3c8-9f6bdeced846', version: 6, variant: 'rfc9562', ...t });
    expect(await inspect('{017F22E2-79B0-7CC3-98C4-DC0C0C07398F}')).toStrictEqual({ valid: true, kind: 'uuid', canonical: '017f22e2-79b0-7cc3-98c4-dc0c0c07398f', version: 7, variant: 'rfc9562', ...t });
    expect(await inspect('919108f7-52d1-4320-9bac-f847db4148a8')).toStrictEqual({ valid: true, kind: 'uuid', canonical: '919108f7-52d1-4320-9bac-f847db4148a8', version: 4, variant: 'rfc9562', timestamp: null, unix_ms: null });
  });

  it('nil, max, other variants, ULID, nanoid shape and garbage', async () => {
    expect(await inspect('00000000-0000-0000-0000-000000000000')).toMatchObject({ valid: true, version: null, note: 'Nil UUID' });
    expect(await inspect('FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF')).toMatchObject({ valid: true, version: null, note: 'Max UUID' });
    expect(await inspect('919108f7-52d1-4320-1bac-f847db4148a8')).toMatchObject({ valid: true, variant: 'ncs', version: null });
    expect(await inspect('919108f7-52d1-f320-9bac-f847db4148a8')).toMatchObject({ valid: false, version: 15 });
    expect(await inspect('01ARZ3NDEKTSV4RRFFQ69G5FAV')).toStrictEqual({ valid: true, kind: 'ulid', canonical: '01ARZ3NDEKTSV4RRFFQ69G5FAV', version: null, variant: null, timestamp: '2016-07-30T23:54:10.259Z', unix_ms: 1469922850259 });
    expect(await inspect('V1StGXR8_Z5jdHi6B-myT')).toMatchObject({ valid: true, kind: 'nanoid', timestamp: null });
    expect(await inspect('8ZZZZZZZZZZZZZZZZZZZZZZZZZ')).toMatchObject({ valid: false, kind: 'unknown' });
    expect(await inspect('not-an-id')).toMatchObject({ valid: false, kind: 'unknown' });
  });

  it('generated uuid7 and ulid carry the service clock, sort in order, and read back', async () => {
    clock.t = Date.parse('2026-11-26T12:00:00.123Z');
    for (const kind of ['uuid7', 'ulid'] as const) {
      const { ids } = (await h.call(idGenerate, { kind, count: 1000 })) as { ids: string[] };
      expect(new Set(ids).size).toBe(1000);
      expect([...ids].sort()).toStrictEqual(ids);
      for (const id of [ids[0]!, ids[999]!]) expect(await inspect(id)).toMatchObject({ valid: true, kind: kind === 'ulid' ? 'ulid' : 'uuid', timestamp: '2026-11-26T12:00:00.123Z', ...(kind === 'uuid7' && { version: 7, variant: 'rfc9562' }) });
    }
    const { ids } = (await h.call(idGenerate, { kind: 'uuid4', count: 3 })) as { ids: string[] };
    for (const id of ids) expect(await inspect(id)).toMatchObject({ valid: true, version: 4, variant: 'rfc9562' });
  });

  it('nanoid: length and alphabet honoured, every character of it drawn', async () => {
    const { ids } = (await h.call(idGenerate, { kind: 'nanoid', count: 1000, size: 8, alphabet: 'abc' })) as { ids: string[] };
    expect(ids.every((id) => /^[abc]{8}$/.test(id))).toBe(true);
    const counts = [...'abc'].map((c) => ids.join('').split(c).length - 1);
    // 8000 draws of three equally likely characters: each about 2667; 2400 is more than 6 sigma away.
    for (const n of counts) expect(n).toBeGreaterThan(2400);
    expect(((await h.call(idGenerate, { kind: 'nanoid' })) as { ids: string[] }).ids[0]).toMatch(/^[A-Za-z0-9_-]{21}$/);
    expect(await h.failure(idGenerate, { kind: 'nanoid', alphabet: 'aa' })).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
    expect(await h.failure(idGenerate, { count: 1001 })).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
  });
});

/** A CA and a leaf it signs, made by the openssl command line. */
function opensslChain(): { ca: string; leaf: string } {
  const dir = tempDir();
  const f = (n: string) => path.join(dir, n);
  const run = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '3650', '-subj', '/C=DE/O=Test CA/CN=Test Root', '-set_serial', '0x1001', '-addext', 'basicConstraints=critical,CA:TRUE');
  run('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f('leaf.key'), '-out', f('leaf.csr'), '-subj', '/CN=example.test');
  fs.writeFileSync(f('ext'), 'subjectAltName=DNS:example.test,DNS:*.example.test,IP:192.0.2.1\nbasicConstraints=CA:FALSE\n');
  run('x509', '-req', '-in', f('leaf.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-set_serial', '0x2a', '-days', '30', '-extfile', f('ext'), '-out', f('leaf.pem'));
  return { ca: fs.readFileSync(f('ca.pem'), 'utf8'), leaf: fs.readFileSync(f('leaf.pem'), 'utf8') };
}

describe('cert_decode: a chain made by openssl', () => {
  const chain = opensslChain();
  const fp = (pem: string) => execFileSync('openssl', ['x509', '-noout', '-fingerprint', '-sha256'], { input: pem }).toString().trim().split('=')[1];
  const date = (pem: string, which: string) => new Date(execFileSync('openssl', ['x509', '-noout', `-${which}`], { input: pem }).toString().trim().split('=')[1]!).toISOString();

  it('decodes leaf then CA, with what openssl says of each, and the chain link', async () => {
    clock.t = Date.now();
    const r = (await h.call(certDecode, { pem: chain.leaf + chain.ca })) as { certificates: unknown[] };
    expect(r.certificates).toStrictEqual([
      {
        subject: 'CN=example.test',
        issuer: 'C=DE, O=Test CA, CN=Test Root',
        san: ['DNS:example.test', 'DNS:*.example.test', 'IP Address:192.0.2.1'],
        not_before: date(chain.leaf, 'startdate'),
        not_after: date(chain.leaf, 'enddate'),
        expired: false,
        not_yet_valid: false,
        serial: '2a',
        fingerprint_sha256: fp(chain.leaf),
        key: { type: 'ec', curve: 'prime256v1' },
        is_ca: false,
        self_signed: false,
        signed_by_next: true,
      },
      {
        subject: 'C=DE, O=Test CA, CN=Test Root',
        issuer: 'C=DE, O=Test CA, CN=Test Root',
        san: [],
        not_before: date(chain.ca, 'startdate'),
        not_after: date(chain.ca, 'enddate'),
        expired: false,
        not_yet_valid: false,
        serial: '1001',
        fingerprint_sha256: fp(chain.ca),
        key: { type: 'rsa', size: 2048 },
        is_ca: true,
        self_signed: true,
        signed_by_next: null,
      },
    ]);
    clock.t = Date.now() + 31 * 86_400_000;
    expect(((await h.call(certDecode, { pem: chain.leaf })) as { certificates: Array<{ expired: boolean }> }).certificates[0]!.expired).toBe(true);
    // In the wrong order, the link does not hold.
    expect(((await h.call(certDecode, { pem: chain.ca + chain.leaf })) as { certificates: Array<{ signed_by_next: boolean | null }> }).certificates.map((c) => c.signed_by_next)).toStrictEqual([false, null]);
  });

  it('hostile: no block, a corrupt block, too many, and 10 MB are clear 4xx', async () => {
    expect(await h.failure(certDecode, { pem: 'hello' })).toMatchObject({ status: 422, code: 'PARSE_ERROR' });
    expect(await h.failure(certDecode, { pem: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' })).toMatchObject({ status: 422, code: 'PARSE_ERROR' });
    expect(await h.failure(certDecode, { pem: chain.ca.repeat(33) })).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
    expect(await h.failure(certDecode, { pem: `-----BEGIN CERTIFICATE-----\n${'A'.repeat(10 * 1024 * 1024)}\n-----END CERTIFICATE-----` })).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
  });
});
