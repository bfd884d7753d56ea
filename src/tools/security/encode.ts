import { gunzipSync, gzipSync } from 'node:zlib';
import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { fromBase64, fromHex, toBytes, utf8OrUndefined } from './bytes.js';

const Codec = z.enum(['base64', 'base64url', 'hex', 'url', 'gzip_base64']);
type Codec = z.infer<typeof Codec>;

/** Longest `input` in characters (the request body limit binds first by default). */
export const ENCODE_MAX_INPUT = 1_048_576;
/** Largest decoded result in bytes: a gzip bomb stops here instead of filling memory. */
export const ENCODE_MAX_OUTPUT = 4 * 1_048_576;

/** RFC 3986 §2.3 unreserved characters stay; every other byte becomes %XX (upper-case hex). */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

function percentEncode(bytes: Buffer): string {
  let out = '';
  for (const b of bytes) {
    const ch = String.fromCharCode(b);
    out += b < 0x80 && UNRESERVED.test(ch) ? ch : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function percentDecode(text: string): Buffer {
  const bad = /%(?![0-9a-fA-F]{2})/.exec(text);
  if (bad) throw new ToolError('PARSE_ERROR', `Malformed percent-escape at position ${bad.index + 1}`, { position: bad.index + 1 });
  // Escapes shrink 3 characters to 1 byte, so the UTF-8 length of the text bounds the result.
  const out = Buffer.allocUnsafe(Buffer.byteLength(text));
  let at = 0;
  let from = 0;
  for (let i = text.indexOf('%'); i !== -1; i = text.indexOf('%', from)) {
    at += out.write(text.slice(from, i), at, 'utf8');
    out[at++] = parseInt(text.slice(i + 1, i + 3), 16);
    from = i + 3;
  }
  at += out.write(text.slice(from), at, 'utf8');
  return out.subarray(0, at);
}

function gunzip(bytes: Buffer): Buffer {
  try {
    return gunzipSync(bytes, { maxOutputLength: ENCODE_MAX_OUTPUT });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new ToolError('PAYLOAD_TOO_LARGE', `Decompressed data exceeds ${ENCODE_MAX_OUTPUT} bytes`, { limit: ENCODE_MAX_OUTPUT });
    }
    throw new ToolError('PARSE_ERROR', 'Not gzip data (or truncated/corrupt)');
  }
}

function encodeBytes(bytes: Buffer, codec: Codec): string {
  switch (codec) {
    case 'base64':
      return bytes.toString('base64');
    case 'base64url':
      return bytes.toString('base64url');
    case 'hex':
      return bytes.toString('hex');
    case 'url':
      return percentEncode(bytes);
    case 'gzip_base64':
      return gzipSync(bytes).toString('base64');
  }
}

function decodeText(text: string, codec: Codec): Buffer {
  switch (codec) {
    case 'base64':
      return fromBase64(text, 'input', 'base64');
    case 'base64url':
      return fromBase64(text, 'input', 'base64url');
    case 'hex':
      return fromHex(text, 'input');
    case 'url':
      return percentDecode(text);
    case 'gzip_base64':
      return gunzip(fromBase64(text, 'input'));
  }
}

export const encode = defineTool({
  name: 'encode',
  title: 'Encode / decode',
  description:
    'Encode bytes as base64, base64url, hex, percent-encoding (RFC 3986 component) or gzip+base64, or decode them back. Decoded bytes that are not UTF-8 come back as result_base64 with is_utf8 false.',
  input: z.object({
    input: z.string().max(ENCODE_MAX_INPUT).describe('Text to encode, or the encoded text to decode'),
    action: z.enum(['encode', 'decode']).default('encode').describe('encode or decode'),
    codec: Codec.default('base64').describe('url: percent-encoding of a URI component'),
    input_encoding: z.enum(['utf8', 'base64', 'hex']).default('utf8').describe('encode only: how input carries the bytes (base64/hex for binary)'),
  }),
  output: z.object({
    result: z.string().optional().describe('The encoded text, or the decoded text when it is UTF-8'),
    result_base64: z.string().optional().describe('decode: the bytes, when they are not UTF-8'),
    is_utf8: z.boolean().optional().describe('decode: whether the bytes are valid UTF-8'),
    bytes: z.number().int().describe('Length of the raw (unencoded) data in bytes'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'POST', path: '/api/encode' },
  example: { input: 'héllo wörld', action: 'encode', codec: 'base64' },
  handler: ({ input, action, codec, input_encoding }) => {
    if (action === 'encode') {
      const bytes = toBytes(input, input_encoding, 'input');
      const result = encodeBytes(bytes, codec);
      return { result, bytes: bytes.length };
    }
    const bytes = decodeText(input, codec);
    if (bytes.length > ENCODE_MAX_OUTPUT) throw new ToolError('PAYLOAD_TOO_LARGE', `Decoded data exceeds ${ENCODE_MAX_OUTPUT} bytes`, { limit: ENCODE_MAX_OUTPUT });
    const text = utf8OrUndefined(bytes);
    return text === undefined ? { result_base64: bytes.toString('base64'), is_utf8: false, bytes: bytes.length } : { result: text, is_utf8: true, bytes: bytes.length };
  },
});
