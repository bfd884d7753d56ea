// Issue 34: no input of the security tools' limits makes their work grow faster than its size
// (n against 4n in CPU time, test/growth.ts): percent-decoding, strict base64 checks, hashing,
// and a certificate with many subjectAltNames (made by the openssl command line).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { certDecode } from '../src/tools/security/cert-decode.js';
import { encode } from '../src/tools/security/encode.js';
import { hash } from '../src/tools/security/hash.js';
import { growth, GROWTH_TIMEOUT_MS, MAX_GROWTH } from './growth.js';
import { tempDir, useToolHarness } from './harness.js';

const h = useToolHarness();

describe('security tools grow linearly', () => {
  it('encode: percent-decoding escapes and multi-byte text', async () => {
    const g = await growth(async (n) => {
      const r = (await h.call(encode, { input: '%C3%A9é'.repeat(n), action: 'decode', codec: 'url' })) as { bytes: number };
      expect(r.bytes).toBe(4 * n);
    }, { from: 2_000, max: 131_000 });
    expect(g.ratio, g.text).toBeLessThan(MAX_GROWTH);
  }, GROWTH_TIMEOUT_MS);

  it('encode / hash: strict base64 of a nearly valid string (one bad character at the end)', async () => {
    const g = await growth(async (n) => {
      expect((await h.failure(hash, { input: `${'QUJD'.repeat(n)}Q$==`, input_encoding: 'base64' })).code).toBe('INVALID_INPUT');
      expect((await h.failure(encode, { input: `${'QUJD'.repeat(n)}=A`, action: 'decode' })).code).toBe('INVALID_INPUT');
    }, { from: 10_000, max: 250_000 });
    expect(g.ratio, g.text).toBeLessThan(MAX_GROWTH);
  }, GROWTH_TIMEOUT_MS);

  it('cert_decode: subjectAltName lists', async () => {
    const dir = tempDir();
    const made = new Map<number, string>();
    const cert = (n: number) => {
      if (!made.has(n)) {
        const cnf = path.join(dir, `${n}.cnf`);
        const sans = Array.from({ length: n }, (_, i) => `DNS.${i + 1} = h${i}.example.test`).join('\n');
        fs.writeFileSync(cnf, `[req]\ndistinguished_name=dn\nx509_extensions=ext\nprompt=no\n[dn]\nCN=x\n[ext]\nsubjectAltName=@alt\n[alt]\n${sans}\n`);
        made.set(n, execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', path.join(dir, 'k'), '-days', '1', '-config', cnf], { stdio: ['ignore', 'pipe', 'pipe'] }).toString());
      }
      return made.get(n)!;
    };
    const g = await growth(async (n) => {
      const r = (await h.call(certDecode, { pem: cert(n) })) as { certificates: Array<{ san: string[] }> };
      expect(r.certificates[0]!.san).toHaveLength(n);
    }, { from: 250, max: 8_000 });
    expect(g.ratio, g.text).toBeLessThan(MAX_GROWTH);
  }, GROWTH_TIMEOUT_MS);
});
