/** Text ⇄ bytes for the security tools: strict decoders, so a typo is a 400, not silently other bytes. */
import { ToolError } from '../../errors.js';

/** How a text field carries bytes. */
export type ByteEncoding = 'utf8' | 'base64' | 'hex';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]*={0,2}$/;
const HEX = /^(?:[0-9a-fA-F]{2})*$/;

/** Base64 (standard or URL alphabet, padding optional, whitespace ignored) → bytes; anything else is a 400 naming `field`. */
export function fromBase64(text: string, field: string, alphabet: 'base64' | 'base64url' | 'either' = 'either'): Buffer {
  const s = text.replace(/\s+/g, '');
  const ok = (alphabet !== 'base64url' && BASE64.test(s)) || (alphabet !== 'base64' && BASE64URL.test(s));
  // Node's decoder skips bad characters silently; the length rule catches a truncated tail.
  if (!ok || s.replace(/=+$/, '').length % 4 === 1) throw new ToolError('INVALID_INPUT', `${field} is not valid ${alphabet === 'either' ? 'base64' : alphabet}`);
  return Buffer.from(s, alphabet === 'base64' ? 'base64' : 'base64url');
}

/** Hex (even length, whitespace and a 0x prefix ignored) → bytes; anything else is a 400 naming `field`. */
export function fromHex(text: string, field: string): Buffer {
  const s = text.replace(/\s+/g, '').replace(/^0x/i, '');
  if (!HEX.test(s)) throw new ToolError('INVALID_INPUT', `${field} is not valid hex (an even number of 0-9a-f digits)`);
  return Buffer.from(s, 'hex');
}

/** The bytes a text field stands for under its encoding. */
export function toBytes(text: string, encoding: ByteEncoding, field: string): Buffer {
  if (encoding === 'base64') return fromBase64(text, field);
  if (encoding === 'hex') return fromHex(text, field);
  return Buffer.from(text, 'utf8');
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The bytes as text when they are valid UTF-8, else undefined. */
export function utf8OrUndefined(bytes: Uint8Array): string | undefined {
  try {
    return UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}
