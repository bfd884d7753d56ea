import { randomBytes, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { bytesToBigInt, inspectId, ulid, uuid7 } from './ids.js';

const Kind = z.enum(['uuid4', 'uuid7', 'ulid', 'nanoid']);
const NANOID_ALPHABET = 'useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict';

/** Most ids one call makes. */
export const ID_MAX_COUNT = 1000;

/**
 * `size` characters drawn uniformly from `alphabet` with the CSPRNG: rejection sampling on a
 * power-of-two mask (nanoid's own method), so no character is likelier than another.
 */
function nanoid(alphabet: string, size: number): string {
  const chars = [...alphabet];
  const mask = (2 << Math.floor(Math.log2(chars.length - 1))) - 1;
  const out: string[] = [];
  while (out.length < size) {
    for (const b of randomBytes(Math.ceil((1.6 * mask * size) / chars.length))) {
      const ch = chars[b & mask];
      if (ch !== undefined) out.push(ch);
      if (out.length === size) break;
    }
  }
  return out.join('');
}

/** `count` time-ordered ids: the random part of a later id within the same ms is the previous one plus one. */
function timeOrdered(count: number, now: number, bits: 74 | 80, make: (ms: number, r: bigint) => string): string[] {
  const max = (1n << BigInt(bits)) - 1n;
  // The top bit left clear: room for a thousand increments without overflowing into the time.
  let r = bytesToBigInt(randomBytes(10)) & (max >> 1n);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    ids.push(make(now, r));
    r += 1n;
  }
  return ids;
}

export const idGenerate = defineTool({
  name: 'id_generate',
  title: 'ID generator',
  description: 'Generate random ids from the CSPRNG: UUIDv4, UUIDv7 (time-ordered, RFC 9562), ULID or nanoid. A batch of uuid7/ulid sorts in generation order.',
  input: z.object({
    kind: Kind.describe('Id kind'),
    count: z.number().int().min(1).max(ID_MAX_COUNT).default(1).describe('How many'),
    size: z.number().int().min(2).max(256).default(21).describe('nanoid length'),
    alphabet: z.string().min(2).max(256).optional().describe('nanoid alphabet (default A-Za-z0-9_-)'),
  }),
  output: z.object({ ids: z.array(z.string()) }),
  annotations: { readOnlyHint: true, idempotentHint: false, openWorldHint: false },
  rest: { method: 'POST', path: '/api/id-generate' },
  example: { kind: 'uuid7', count: 2 },
  handler: ({ kind, count, size, alphabet }, ctx) => {
    const now = ctx.services.clock.now();
    if (kind === 'uuid4') return { ids: Array.from({ length: count }, () => randomUUID()) };
    if (kind === 'uuid7') return { ids: timeOrdered(count, now, 74, uuid7) };
    if (kind === 'ulid') return { ids: timeOrdered(count, now, 80, ulid) };
    const chars = alphabet ?? NANOID_ALPHABET;
    if (new Set(chars).size !== [...chars].length) throw new ToolError('INVALID_INPUT', 'alphabet has a repeated character');
    return { ids: Array.from({ length: count }, () => nanoid(chars, size)) };
  },
});

export const idInspect = defineTool({
  name: 'id_inspect',
  title: 'ID inspector',
  description: 'Tell what an id is: UUID (version, variant, embedded time of v1/v6/v7), ULID (time) or nanoid shape.',
  input: z.object({ value: z.string().max(200).describe('The id, e.g. a UUID (any case, braces or urn:uuid: allowed) or a ULID') }),
  output: z.object({
    valid: z.boolean(),
    kind: z.enum(['uuid', 'ulid', 'nanoid', 'unknown']),
    canonical: z.string().nullable().describe('Normalised form'),
    version: z.number().int().nullable().describe('UUID version'),
    variant: z.enum(['ncs', 'rfc9562', 'microsoft', 'future']).nullable(),
    timestamp: z.string().nullable().describe('Embedded time, ISO 8601 (v1/v6/v7, ULID)'),
    unix_ms: z.number().nullable(),
    note: z.string().optional(),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'POST', path: '/api/id-inspect' },
  example: { value: '017f22e2-79b0-7cc3-98c4-dc0c0c07398f' },
  handler: ({ value }) => inspectId(value),
});
