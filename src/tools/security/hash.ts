import { createHash, createHmac } from 'node:crypto';
import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { toBytes } from './bytes.js';

/** Digests offered: node:crypto (OpenSSL) names, each FIPS 180-4 / 202 or RFC 1321 / 7693. */
export const HASH_ALGORITHMS = ['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512', 'sha3-256', 'sha3-512', 'blake2b512'] as const;
const Algorithm = z.enum(HASH_ALGORITHMS);
const Encoding = z.enum(['utf8', 'base64', 'hex']);

/** Longest `input` in characters: the request body limit binds first by default (1 MiB). */
export const HASH_MAX_INPUT = 1_048_576;
/** Longest `hmac_key` in characters. */
export const HMAC_MAX_KEY = 4096;

const Digest = z.object({ hex: z.string(), base64: z.string() });

export const hash = defineTool({
  name: 'hash',
  title: 'Hash / HMAC',
  description: 'Hash bytes (md5, sha1, sha2, sha3-256/512, blake2b512), or HMAC them with hmac_key. Input as UTF-8 text, base64 or hex.',
  input: z.object({
    input: z.string().max(HASH_MAX_INPUT).describe('The data to hash'),
    input_encoding: Encoding.default('utf8').describe('How input carries the bytes'),
    algorithms: z.array(Algorithm).min(1).max(HASH_ALGORITHMS.length).default(['sha256']).describe('Digests to compute'),
    hmac_key: z.string().max(HMAC_MAX_KEY).optional().describe('Key: compute HMACs instead of plain digests'),
    hmac_key_encoding: Encoding.default('utf8').describe('How hmac_key carries the bytes'),
  }),
  output: z.object({
    digests: z.partialRecord(Algorithm, Digest).describe('Per algorithm: the digest (or HMAC) in hex and base64'),
    hmac: z.boolean().describe('True when these are HMACs'),
    bytes: z.number().int().describe('Input length in bytes'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'POST', path: '/api/hash' },
  example: { input: 'abc', algorithms: ['sha256', 'sha3-256'] },
  handler: ({ input, input_encoding, algorithms, hmac_key, hmac_key_encoding }) => {
    const data = toBytes(input, input_encoding, 'input');
    const key = hmac_key === undefined ? undefined : toBytes(hmac_key, hmac_key_encoding, 'hmac_key');
    const digests: Partial<Record<(typeof HASH_ALGORITHMS)[number], z.infer<typeof Digest>>> = {};
    for (const alg of new Set(algorithms)) {
      const d = (key ? createHmac(alg, key) : createHash(alg)).update(data).digest();
      digests[alg] = { hex: d.toString('hex'), base64: d.toString('base64') };
    }
    return { digests, hmac: key !== undefined, bytes: data.length };
  },
});
