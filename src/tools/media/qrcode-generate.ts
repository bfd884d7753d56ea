import zlib from 'node:zlib';
import type QRCode from 'qrcode';
import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { lazyRequire } from '../../lib/lazy-require.js';
import { defineTool, richResult, type ExtraContent } from '../../registry.js';

export const QR_MAX_CONTENT = 2000;

/** qrcode, loaded by the first call. */
const qrcode = lazyRequire<typeof QRCode>('qrcode');

const EcLevel = z.enum(['L', 'M', 'Q', 'H']);
type EcLevel = z.infer<typeof EcLevel>;
const QrFormat = z.enum(['svg', 'png', 'bmp', 'dataurl']);

const HexColour = z
  .string()
  .regex(/^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'A hex colour: 3 or 6 hex digits, # optional (e.g. "000", "#1e90ff")');

/** Version-40 capacity (characters) per mode and error-correction level (ISO/IEC 18004 table 7). */
const CAPACITY: Record<'numeric' | 'alphanumeric' | 'byte', Record<EcLevel, number>> = {
  numeric: { L: 7089, M: 5596, Q: 3993, H: 3057 },
  alphanumeric: { L: 4296, M: 3391, Q: 2420, H: 1852 },
  byte: { L: 2953, M: 2331, Q: 1663, H: 1273 },
};

export const MIME = { svg: 'image/svg+xml', png: 'image/png', bmp: 'image/bmp' } as const;

/** '#1e90ff' from '1E90FF', '#1e9' etc. */
export function normaliseColour(c: string): string {
  let h = c.replace(/^#/, '').toLowerCase();
  if (h.length === 3) h = [...h].map((d) => d + d).join('');
  return `#${h}`;
}

function rgb(c: string): [number, number, number] {
  const n = parseInt(c.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** The QR module matrix: `n`×`n`, `dark[r*n+c]` is 1 for a dark module. */
export interface QrMatrix {
  n: number;
  dark: Uint8Array;
  version: number;
}

function modeOf(content: string): keyof typeof CAPACITY {
  if (/^[0-9]+$/.test(content)) return 'numeric';
  if (/^[0-9A-Z $%*+\-./:]+$/.test(content)) return 'alphanumeric';
  return 'byte';
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Encodes `content`; content too long for the level → 400 naming the limit. */
export function qrMatrix(content: string, ecLevel: EcLevel): QrMatrix {
  // A lone UTF-16 surrogate (legal in a JSON string: "\ud800") has no UTF-8 form; the qrcode
  // library's encodeURIComponent threw URIError on it, which became a 500.
  if (LONE_SURROGATE.test(content)) {
    throw new ToolError('INVALID_INPUT', 'content contains an unpaired UTF-16 surrogate, which has no UTF-8 encoding', { path: 'content' });
  }
  let qr: QRCode.QRCode;
  try {
    qr = qrcode().create(content, { errorCorrectionLevel: ecLevel });
  } catch (err) {
    const mode = modeOf(content);
    const length = mode === 'byte' ? Buffer.byteLength(content, 'utf8') : content.length;
    const unit = mode === 'byte' ? 'bytes' : 'characters';
    const limit = CAPACITY[mode][ecLevel];
    if (/too big/i.test((err as Error).message)) {
      throw new ToolError(
        'INVALID_INPUT',
        `Content is too long for a QR code at error-correction level ${ecLevel}: ${length} ${unit} given, at most ${limit} fit (${mode} mode). ` +
          `Shorten it or use a lower level (L holds ${CAPACITY[mode].L}).`,
        { path: 'content', limit, length, unit, mode, ecLevel },
      );
    }
    throw err;
  }
  const n = qr.modules.size;
  return { n, dark: Uint8Array.from(qr.modules.data as unknown as ArrayLike<number>), version: qr.version };
}

/**
 * Module index (or -1 for quiet zone) of each pixel along one axis. The image is exactly
 * `size` pixels and the quiet zone exactly `margin` modules, so modules are size/(n+2·margin)
 * pixels wide: 1 px wider or narrower from one to the next when that is not a whole number.
 * The SVG (viewBox in modules, scaled to `size`) draws the same grid.
 */
function axis(size: number, n: number, margin: number): Int32Array {
  const total = n + 2 * margin;
  const idx = new Int32Array(size);
  for (let i = 0; i < size; i++) {
    const m = Math.floor(((i + 0.5) * total) / size) - margin;
    idx[i] = m >= 0 && m < n ? m : -1;
  }
  return idx;
}

/** Top-down pixels of the code, one byte per pixel: 1 = dark module, 0 = background. */
export function rasterise(m: QrMatrix, size: number, margin: number): Uint8Array {
  const px = new Uint8Array(size * size);
  const idx = axis(size, m.n, margin);
  for (let y = 0; y < size; y++) {
    const r = idx[y]!;
    if (r < 0) continue;
    for (let x = 0; x < size; x++) {
      const c = idx[x]!;
      if (c >= 0 && m.dark[r * m.n + c]) px[y * size + x] = 1;
    }
  }
  return px;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** CRC-32 as PNG chunks need it (zlib.crc32 is Node 22+). */
function crc32(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'ascii');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/**
 * A 1-bit indexed PNG (palette: background, foreground). Written here rather than by a
 * quantising encoder so the two colours come out exactly as asked, in a few hundred bytes.
 */
export function toPng(px: Uint8Array, size: number, fg: string, bg: string): Buffer {
  const rowBytes = Math.ceil(size / 8);
  const scan = Buffer.alloc((rowBytes + 1) * size); // filter byte 0 (None) per row
  for (let y = 0; y < size; y++) {
    const row = y * (rowBytes + 1) + 1;
    for (let x = 0; x < size; x++) if (px[y * size + x]) scan[row + (x >> 3)]! |= 0x80 >> (x & 7);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 1; // bit depth
  ihdr[9] = 3; // indexed colour
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('PLTE', Buffer.from([...rgb(bg), ...rgb(fg)])),
    pngChunk('IDAT', zlib.deflateSync(scan, { level: 9 })),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A 24-bit uncompressed BMP (BITMAPINFOHEADER, bottom-up rows padded to 4 bytes). */
export function toBmp(px: Uint8Array, size: number, fg: string, bg: string): Buffer {
  const colours = [rgb(bg), rgb(fg)];
  const stride = Math.ceil((size * 3) / 4) * 4;
  const imageBytes = stride * size;
  const out = Buffer.alloc(54 + imageBytes);
  out.write('BM', 0, 'ascii');
  out.writeUInt32LE(54 + imageBytes, 2);
  out.writeUInt32LE(54, 10); // pixel data offset
  out.writeUInt32LE(40, 14); // BITMAPINFOHEADER
  out.writeInt32LE(size, 18);
  out.writeInt32LE(size, 22); // positive: bottom-up
  out.writeUInt16LE(1, 26); // planes
  out.writeUInt16LE(24, 28); // bits per pixel
  out.writeUInt32LE(0, 30); // BI_RGB
  out.writeUInt32LE(imageBytes, 34);
  out.writeInt32LE(2835, 38); // 72 dpi
  out.writeInt32LE(2835, 42);
  for (let y = 0; y < size; y++) {
    const row = 54 + (size - 1 - y) * stride;
    for (let x = 0; x < size; x++) {
      const [r, g, b] = colours[px[y * size + x]!]!;
      const d = row + x * 3;
      out[d] = b;
      out[d + 1] = g;
      out[d + 2] = r;
    }
  }
  return out;
}

/** An SVG document of exactly `size`×`size` px; one path of horizontal runs of dark modules. */
export function toSvg(m: QrMatrix, size: number, margin: number, fg: string, bg: string): string {
  const total = m.n + 2 * margin;
  let d = '';
  for (let r = 0; r < m.n; r++) {
    for (let c = 0; c < m.n; ) {
      if (!m.dark[r * m.n + c]) {
        c++;
        continue;
      }
      let end = c;
      while (end < m.n && m.dark[r * m.n + end]) end++;
      d += `M${c + margin} ${r + margin}h${end - c}v1h-${end - c}z`;
      c = end;
    }
  }
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}" viewBox="0 0 ${total} ${total}" shape-rendering="crispEdges">` +
    `<rect width="${total}" height="${total}" fill="${bg}"/><path fill="${fg}" d="${d}"/></svg>\n`
  );
}

export const qrcodeGenerate = defineTool({
  name: 'qrcode_generate',
  view: 'qrcode',
  title: 'QR code generator',
  description:
    'Encode text or a URL as a QR code image: SVG, PNG, 24-bit BMP, or a PNG data URL. The image is exactly `size` pixels square, quiet zone included. Over MCP the result always carries a PNG image block, plus the SVG text or data URL for those formats.',
  input: z.object({
    content: z
      .string()
      .min(1)
      .max(QR_MAX_CONTENT)
      .describe(`Text or URL to encode (1-${QR_MAX_CONTENT} characters; what fits depends on ecLevel: at H, ${CAPACITY.byte.H} bytes of UTF-8, ${CAPACITY.alphanumeric.H} of 0-9 A-Z $%*+-./: and space, or ${CAPACITY.numeric.H} digits)`),
    size: z
      .number()
      .int()
      .min(64)
      .max(1024)
      .default(256)
      .describe("Width and height of the image in pixels, quiet zone included (64-1024); at least the code's width in modules, which grows with the content (a refusal names it)"),
    format: QrFormat.default('svg').describe('svg, png, bmp (24-bit) or dataurl (a data:image/png;base64 URL in JSON)'),
    fgColor: HexColour.default('000000').describe('Colour of the dark modules: 3 or 6 hex digits, # optional; must differ from bgColor ("#abc" and "AABBCC" are the same colour)'),
    bgColor: HexColour.default('ffffff').describe('Background colour: 3 or 6 hex digits, # optional; must differ from fgColor'),
    ecLevel: EcLevel.default('M').describe('Error-correction level: L (7%), M (15%), Q (25%), H (30%); higher holds less content'),
    margin: z.number().int().min(0).max(16).default(4).describe('Quiet zone around the code, in modules (0-16; scanners want 4)'),
  }),
  output: z.object({
    format: QrFormat.describe('The format produced'),
    size: z.number().int().optional().describe('Image width and height in pixels (svg, png, bmp)'),
    mimeType: z.string().optional().describe('Media type of the image bytes (svg, png, bmp)'),
    bytes: z.number().int().optional().describe('Length of the image bytes (svg, png, bmp)'),
    dataUrl: z.string().optional().describe('data:image/png;base64,… (dataurl only)'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'POST', path: '/api/qrcode' },
  binary: { contentTypes: [MIME.svg, MIME.png, MIME.bmp], when: 'format is svg, png or bmp; dataurl answers JSON' },
  inputRules: [
    {
      distinct: ['fgColor', 'bgColor'],
      key: (c) => normaliseColour(c as string),
      message: 'fgColor and bgColor are the same colour: the code would be invisible',
    },
  ],
  example: { content: 'https://example.com', format: 'png', size: 256 },
  handler: ({ content, size, format, fgColor, bgColor, ecLevel, margin }) => {
    const fg = normaliseColour(fgColor);
    const bg = normaliseColour(bgColor);
    const m = qrMatrix(content, ecLevel);
    const modules = m.n + 2 * margin;
    if (size < modules) {
      throw new ToolError(
        'INVALID_INPUT',
        `size ${size} is too small for this content: the code is ${modules} modules wide (margin included), so size must be at least ${modules} (${modules * 3} or more scans reliably)`,
        { path: 'size', minimum: modules },
      );
    }
    const px = rasterise(m, size, margin);
    const png = toPng(px, size, fg, bg);
    const image: ExtraContent = { type: 'image', data: png.toString('base64'), mimeType: MIME.png };
    if (format === 'dataurl') {
      const dataUrl = `data:image/png;base64,${image.data}`;
      return richResult({ json: { format, dataUrl }, content: [image, { type: 'text', text: dataUrl }] });
    }
    if (format === 'svg') {
      const svg = toSvg(m, size, margin, fg, bg);
      const data = Buffer.from(svg, 'utf8');
      return richResult({
        json: { format, size, mimeType: MIME.svg, bytes: data.length },
        body: { data, contentType: MIME.svg },
        content: [image, { type: 'text', text: svg }],
      });
    }
    const data = format === 'png' ? png : toBmp(px, size, fg, bg);
    return richResult({
      json: { format, size, mimeType: MIME[format], bytes: data.length },
      body: { data, contentType: MIME[format] },
      content: [image],
    });
  },
});
