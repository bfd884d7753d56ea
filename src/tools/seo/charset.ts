/**
 * Decoding an HTML body to text, with the encoding chosen the way browsers choose it (HTML
 * standard, "determining the character encoding", simplified): a byte order mark, then the
 * charset of the Content-Type header, then a `<meta charset>` or `<meta http-equiv=content-type>`
 * in the first PRESCAN_BYTES, else UTF-8. Labels are resolved by the WHATWG Encoding standard
 * (TextDecoder: `gb2312` → gbk, `latin1` → windows-1252, `x-sjis` → shift_jis, …); a label
 * TextDecoder does not know is tried with iconv-lite; an unknown one falls back to UTF-8.
 */
import iconv from 'iconv-lite';
import { scanHtml } from './html-scan.js';

/** How far into the body a `<meta charset>` is looked for (the standard says 1024; pages are sloppier). */
export const PRESCAN_BYTES = 8 * 1024;

export interface DecodedHtml {
  text: string;
  /** The encoding used (WHATWG name, or the iconv-lite label). */
  encoding: string;
  /** Where the encoding came from. */
  source: 'bom' | 'header' | 'meta' | 'default';
}

function bomEncoding(body: Uint8Array): string | null {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return 'utf-8';
  if (body[0] === 0xfe && body[1] === 0xff) return 'utf-16be';
  if (body[0] === 0xff && body[1] === 0xfe) return 'utf-16le';
  return null;
}

/** The label declared by a `<meta>` in the first bytes, or null. */
export function metaCharset(body: Uint8Array): string | null {
  const head = Buffer.from(body.buffer, body.byteOffset, Math.min(body.length, PRESCAN_BYTES)).toString('latin1');
  for (const meta of scanHtml(head).metas) {
    const charset = meta.get('charset');
    if (charset !== undefined && charset.trim()) return charset.trim();
    if ((meta.get('http-equiv') ?? '').trim().toLowerCase() === 'content-type') {
      const m = /charset\s*=\s*["']?\s*([^"';\s]+)/i.exec(meta.get('content') ?? '');
      if (m) return m[1]!;
    }
  }
  return null;
}

/** A decoder for a label, or null when neither TextDecoder nor iconv-lite knows it. */
function decoderFor(label: string): { name: string; decode: (b: Uint8Array) => string } | null {
  try {
    const td = new TextDecoder(label.trim());
    // Node 20's TextDecoder decodes windows-1252 (the WHATWG meaning of latin1, iso-8859-1,
    // ascii) as ISO-8859-1, losing “smart quotes” and €; iconv-lite has the real table.
    if (td.encoding === 'windows-1252') return { name: td.encoding, decode: (b) => iconv.decode(Buffer.from(b), 'windows-1252') };
    return { name: td.encoding, decode: (b) => td.decode(b) };
  } catch {
    /* not a WHATWG label */
  }
  if (iconv.encodingExists(label)) return { name: label.toLowerCase(), decode: (b) => iconv.decode(Buffer.from(b), label) };
  return null;
}

/** Decodes an HTML body (never throws; undecodable bytes become U+FFFD). */
export function decodeHtml(body: Uint8Array, headerCharset: string | null): DecodedHtml {
  const bom = bomEncoding(body);
  if (bom) {
    const td = new TextDecoder(bom); // strips the BOM
    return { text: td.decode(body), encoding: bom, source: 'bom' };
  }
  if (headerCharset) {
    const d = decoderFor(headerCharset);
    if (d) return { text: d.decode(body), encoding: d.name, source: 'header' };
  }
  const declared = metaCharset(body);
  if (declared) {
    let d = decoderFor(declared);
    if (d && d.name.startsWith('utf-16')) d = decoderFor('utf-8');
    if (d) return { text: d.decode(body), encoding: d.name, source: 'meta' };
  }
  return { text: new TextDecoder('utf-8').decode(body), encoding: 'utf-8', source: 'default' };
}
