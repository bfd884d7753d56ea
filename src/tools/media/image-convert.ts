import type { Metadata, OutputInfo } from 'sharp';
import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool, richResult, type ToolContext } from '../../registry.js';
import { JobGate } from '../shared.js';

/** Largest image accepted, in pixels, in and out (docs/contract.md §6: 50 megapixels). */
export const MAX_PIXELS = 50_000_000;
/** Largest side of the output (WebP's limit, applied to every format for one rule). */
export const MAX_SIDE = 16_383;
/** Longest `data` string: base64 of FETCH_MAX_BYTES' default (20 MiB), with slack for a data: prefix. */
export const MAX_DATA_CHARS = 28_000_000;
/** CPU bound for one conversion (sharp aborts the libvips pipeline past it). */
export const CONVERT_TIMEOUT_S = 30;

const OutFormat = z.enum(['webp', 'avif', 'png', 'jpeg']);
type OutFormat = z.infer<typeof OutFormat>;

const MIME: Record<OutFormat, string> = { webp: 'image/webp', avif: 'image/avif', png: 'image/png', jpeg: 'image/jpeg' };

/** Input formats: raster only. SVG (and PDF etc.) are refused: a vector renderer is attack surface we do not need. */
export type InFormat = 'jpeg' | 'png' | 'gif' | 'webp' | 'tiff' | 'avif' | 'heif';

/** The format the bytes really are, from their signature (the server's Content-Type is not trusted). */
export function sniffFormat(b: Uint8Array): InFormat | null {
  const ascii = (from: number, to: number) => Buffer.from(b.subarray(from, to)).toString('latin1');
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length >= 8 && ascii(0, 8) === '\x89PNG\r\n\x1a\n') return 'png';
  if (b.length >= 6 && (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a')) return 'gif';
  if (b.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'webp';
  if (b.length >= 4 && (ascii(0, 4) === 'II*\0' || ascii(0, 4) === 'MM\0*')) return 'tiff';
  if (b.length >= 12 && ascii(4, 8) === 'ftyp') {
    const brand = ascii(8, 12);
    if (brand === 'avif' || brand === 'avis') return 'avif';
    if (['heic', 'heix', 'hevc', 'hevx', 'mif1', 'msf1'].includes(brand)) return 'heif';
  }
  return null;
}

/**
 * AVIF effort by output size. libaom at sharp's default effort 4 took ≈ 3 s for 1000×800 here
 * (effort 3 ≈ 0.5 s, 2 ≈ 0.25 s, 0 ≈ 0.06 s); these keep a 1000×800 image well under 1 s and
 * bigger images from running for minutes. Measured with bench/media.ts; see docs/media.md.
 */
export function avifEffort(pixels: number): number {
  if (pixels <= 1_200_000) return 3;
  if (pixels <= 4_000_000) return 2;
  if (pixels <= 16_000_000) return 1;
  return 0;
}

const B64 = '[A-Za-z0-9+/_-]\\s*';
/**
 * What `decodeBase64` accepts, as a JSON Schema pattern: an optional `data:…;base64,` prefix (of
 * BMP characters: JSON Schema counts code points, the decoder UTF-16 units), then base64 or
 * base64url characters with whitespace anywhere, a count that is not 1 more than a multiple of 4,
 * and up to two `=`; not empty. A test checks it against the decoder.
 */
export const DATA_PATTERN =
  '^(?:[dD][aA][tT][aA]:[\\u0000-\\u002b\\u002d-\\ud7ff\\ue000-\\uffff]{0,200};[bB][aA][sS][eE]64,)?\\s*' +
  `(?:(?:(?:${B64}){4})*(?:(?:${B64}){4}|(?:${B64}){2,3})(?:=\\s*){0,2}|(?:=\\s*){1,2})$`;

/** Decodes `data` (base64 or base64url, whitespace and a data: URL prefix allowed). */
export function decodeBase64(data: string): Buffer {
  const s = data.replace(/^data:[^,]{0,200};base64,/i, '').replace(/\s+/g, '');
  if (s === '' || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(s) || s.replace(/=+$/, '').length % 4 === 1) {
    throw new ToolError('INVALID_INPUT', 'data is not valid base64', { path: 'data' });
  }
  return Buffer.from(s, 'base64');
}

function parseError(message: string): ToolError {
  return new ToolError('PARSE_ERROR', message);
}

async function loadBytes(input: { url?: string | undefined; data?: string | undefined }, ctx: ToolContext): Promise<{ bytes: Buffer; declared: string | null }> {
  const max = ctx.services.config.fetchMaxBytes;
  if (input.data !== undefined) {
    const bytes = decodeBase64(input.data);
    if (bytes.length > max) throw new ToolError('INVALID_INPUT', `data decodes to ${bytes.length} bytes; the limit is ${max}`, { path: 'data' });
    return { bytes, declared: null };
  }
  const res = await ctx.services.fetcher.fetch(input.url!, {
    accept: 'image/avif,image/webp,image/png,image/jpeg,image/*;q=0.8,*/*;q=0.5',
    signal: ctx.signal,
  });
  if (res.status < 200 || res.status > 299) throw new ToolError('UPSTREAM_ERROR', `The URL answered HTTP ${res.status}`, { status: res.status });
  return { bytes: res.body, declared: res.contentType || null };
}

function targetSize(
  src: { width: number; height: number },
  want: { width?: number | undefined; height?: number | undefined; fit: 'cover' | 'fill' | 'inside' },
): { width: number; height: number } {
  const { width: w, height: h } = src;
  if (want.width && want.height) {
    if (want.fit !== 'inside') return { width: want.width, height: want.height };
    const k = Math.min(want.width / w, want.height / h);
    return { width: Math.max(1, Math.round(w * k)), height: Math.max(1, Math.round(h * k)) };
  }
  if (want.width) return { width: want.width, height: Math.max(1, Math.round((h * want.width) / w)) };
  if (want.height) return { width: Math.max(1, Math.round((w * want.height) / h)), height: want.height };
  return { width: w, height: h };
}

export const imageConvert = defineTool({
  name: 'image_convert',
  view: 'image',
  title: 'Image converter',
  description:
    'Convert an image (JPEG, PNG, WebP, GIF, AVIF, TIFF; given as an http(s) URL or as base64 data) to WebP, AVIF, PNG or JPEG, optionally resized. ' +
    'With only width or height the aspect ratio is kept. The input format is detected from the bytes; animated images keep their first frame; EXIF orientation is applied and metadata stripped. Images over 50 megapixels are refused.',
  input: z.object({
    url: z.string().max(2048).optional().describe('http(s) URL of the image (give url or data, not both)'),
    data: z
      .string()
      .max(MAX_DATA_CHARS)
      .optional()
      .meta({
        pattern: DATA_PATTERN,
        description: 'The image as base64 (or base64url; whitespace ignored); a data:image/…;base64, prefix is accepted. At most 20 MiB once decoded (FETCH_MAX_BYTES). Give url or data, not both',
      }),
    format: OutFormat.default('webp').describe('Output format: webp, avif, png or jpeg'),
    quality: z.number().int().min(1).max(100).default(80).describe('Encoder quality 1-100 for webp, avif and jpeg (png is lossless and ignores it)'),
    width: z.number().int().min(1).max(8192).optional().describe('Output width in pixels (1-8192); alone, the height follows the aspect ratio'),
    height: z.number().int().min(1).max(8192).optional().describe('Output height in pixels (1-8192); alone, the width follows the aspect ratio'),
    fit: z
      .enum(['cover', 'inside', 'fill'])
      .default('cover')
      .describe('When both width and height are given: cover (exact size, cropped to keep the aspect ratio), inside (fit within, aspect kept), fill (exact size, stretched)'),
  }),
  output: z.object({
    format: OutFormat.describe('The output format'),
    width: z.number().int().describe('Output width in pixels'),
    height: z.number().int().describe('Output height in pixels'),
    bytes: z.number().int().describe('Size of the encoded image in bytes'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true },
  longRunning: true,
  errors: ['PARSE_ERROR'],
  responseHeaders: { 'X-Image-Width': 'Width of the converted image in pixels', 'X-Image-Height': 'Height of the converted image in pixels' },
  rest: { method: 'POST', path: '/api/image-convert', bodyLimit: 'large' },
  binary: { contentTypes: Object.values(MIME) },
  inputRules: [{ exactlyOne: ['url', 'data'] }],
  example: { url: 'https://example.com/photo.jpg', format: 'webp', quality: 80, width: 800 },
  // The gate covers the download too: 100 calls at once fetch two images at a time, not 100.
  handler: (input, ctx) => CONVERSIONS.run(() => fetchAndConvert(input, ctx)),
});

async function fetchAndConvert(input: ConvertInput & { url?: string | undefined; data?: string | undefined }, ctx: ToolContext) {
  await ctx.progress(0, 3, input.url ? 'fetching' : 'decoding data');
  const { bytes, declared } = await loadBytes(input, ctx);
  await ctx.progress(1, 3, 'fetched');

  const kind = sniffFormat(bytes);
  if (!kind) {
    // Contract §2: a fetched URL with the wrong content type is the upstream's failure (502).
    // A URL that claims an image type but sends something else stays a 422 like bad `data`.
    if (input.url && !/^image\//i.test(declared ?? '')) {
      throw new ToolError('UPSTREAM_ERROR', `The URL answered with content type "${declared ?? 'none'}", not an image`, { contentType: declared ?? '' });
    }
    const said = declared ? ` (the server called it ${declared})` : '';
    throw parseError(`The ${input.url ? 'fetched content' : 'data'} is not an image in a supported format (JPEG, PNG, WebP, GIF, AVIF, TIFF)${said}`);
  }
  return convert(bytes, kind, input, ctx);
}

/** Decoding a 50 MP image takes ~200 MB: at most two at once (two cores), a short line behind them. */
export const CONVERSIONS = new JobGate(2, 32, 'image conversions');

interface ConvertInput {
  format: keyof typeof MIME;
  quality: number;
  width?: number | undefined;
  height?: number | undefined;
  fit: 'cover' | 'inside' | 'fill';
}

async function convert(bytes: Buffer, kind: string, input: ConvertInput, ctx: ToolContext) {
  const { format, quality, fit } = input;
  // Imported on the first conversion: ≈ 0.07 s that start-up need not spend (issue 18).
  const { default: sharp } = await import('sharp');
  const open = () => sharp(bytes, { limitInputPixels: MAX_PIXELS, failOn: 'error', animated: false });
  let meta: Metadata;
  try {
    // Header only; the pixel limit is checked below so the message can name the size.
    meta = await sharp(bytes, { limitInputPixels: false, failOn: 'error', animated: false }).metadata();
  } catch {
    throw parseError(`The ${kind.toUpperCase()} image is corrupt or cannot be decoded`);
  }
  if (!meta.width || !meta.height) throw parseError(`The ${kind.toUpperCase()} image has no dimensions`);
  const pageHeight = meta.pageHeight ?? meta.height;
  if (meta.width * pageHeight > MAX_PIXELS) {
    throw new ToolError(
      'INVALID_INPUT',
      `The image is ${meta.width}×${pageHeight} (${Math.round((meta.width * pageHeight) / 1e6)} megapixels); the limit is ${MAX_PIXELS / 1e6} megapixels`,
    );
  }
  const rotated = (meta.orientation ?? 1) >= 5;
  const src = rotated ? { width: pageHeight, height: meta.width } : { width: meta.width, height: pageHeight };
  const out = targetSize(src, { width: input.width, height: input.height, fit });
  if (out.width > MAX_SIDE || out.height > MAX_SIDE || out.width * out.height > MAX_PIXELS) {
    throw new ToolError(
      'INVALID_INPUT',
      `The output would be ${out.width}×${out.height}; the limits are ${MAX_SIDE} pixels a side and ${MAX_PIXELS / 1e6} megapixels`,
    );
  }
  await ctx.progress(2, 3, 'decoded');

  let img = open().rotate().timeout({ seconds: CONVERT_TIMEOUT_S });
  if (input.width || input.height) img = img.resize({ width: input.width, height: input.height, fit });
  if (format === 'webp') img = img.webp({ quality, effort: 4 });
  else if (format === 'avif') img = img.avif({ quality, effort: avifEffort(out.width * out.height) });
  else if (format === 'png') img = img.png({ compressionLevel: 6 });
  else img = img.flatten({ background: '#ffffff' }).jpeg({ quality });
  let data: Buffer;
  let info: OutputInfo;
  try {
    ({ data, info } = await img.toBuffer({ resolveWithObject: true }));
  } catch (err) {
    const msg = (err as Error).message ?? '';
    if (/timeout/i.test(msg)) throw new ToolError('INVALID_INPUT', `The conversion took longer than ${CONVERT_TIMEOUT_S} s; try a smaller size`);
    throw parseError(`The ${kind.toUpperCase()} image is corrupt or cannot be decoded`);
  }
  await ctx.progress(3, 3, 'encoded');
  const mimeType = MIME[format];
  return richResult({
    json: { format, width: info.width, height: info.height, bytes: data.length },
    body: { data, contentType: mimeType, headers: { 'x-image-width': String(info.width), 'x-image-height': String(info.height) } },
    content: [{ type: 'image', data: data.toString('base64'), mimeType }],
  });
}
