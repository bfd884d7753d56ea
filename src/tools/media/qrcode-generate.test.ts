import jsQRModule from 'jsqr';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import type { ToolError } from '../../errors.js';
import type { RichResult } from '../../registry.js';
import { useToolHarness } from '../../../test/harness.js';
import { qrcodeGenerate } from './qrcode-generate.js';

const t = useToolHarness();
const run = (input: Record<string, unknown>) => t.run(qrcodeGenerate, input);
const failure = async (input: Record<string, unknown>) => {
  const { code, message } = await t.failure(qrcodeGenerate, input);
  return { code, message };
};

interface Rgba {
  width: number;
  height: number;
  data: Uint8ClampedArray;
}

async function decodeRaster(bytes: Uint8Array): Promise<Rgba> {
  const { data, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, data: new Uint8ClampedArray(data) };
}

/** An independent reader of 24-bit BI_RGB BMPs (libvips cannot load BMP). */
function decodeBmp(b: Buffer): Rgba {
  expect(b.toString('ascii', 0, 2)).toBe('BM');
  expect(b.readUInt32LE(2)).toBe(b.length);
  const offset = b.readUInt32LE(10);
  const width = b.readInt32LE(18);
  const height = b.readInt32LE(22);
  expect([b.readUInt32LE(14), b.readUInt16LE(26), b.readUInt16LE(28), b.readUInt32LE(30)]).toStrictEqual([40, 1, 24, 0]);
  const stride = Math.ceil((width * 3) / 4) * 4;
  expect(b.length).toBe(offset + stride * height);
  const data = new Uint8ClampedArray(width * height * 4);
  for (let y = 0; y < height; y++) {
    const row = offset + (height - 1 - y) * stride;
    for (let x = 0; x < width; x++) {
      const s = row + x * 3;
      const d = (y * width + x) * 4;
      data[d] = b[s + 2]!;
      data[d + 1] = b[s + 1]!;
      data[d + 2] = b[s]!;
      data[d + 3] = 255;
    }
  }
  return { width, height, data };
}

function pixel(img: Rgba, x: number, y: number): string {
  const o = (y * img.width + x) * 4;
  return '#' + [img.data[o]!, img.data[o + 1]!, img.data[o + 2]!].map((v) => v.toString(16).padStart(2, '0')).join('');
}

// jsqr ships CommonJS with a default export; under NodeNext its typings see the module object.
const jsQR = jsQRModule as unknown as typeof jsQRModule.default;

function qrText(img: Rgba): string | null {
  return jsQR(img.data, img.width, img.height)?.data ?? null;
}

function body(r: RichResult<Record<string, unknown>>): Buffer {
  if (!r.body) throw new Error('no body');
  return Buffer.from(r.body.data);
}

const URL_CONTENT = 'https://example.com/some/path?q=1&lang=de';

describe('qrcode_generate: every format decodes back', () => {
  it('png: exact size, decodes, colours honoured, PNG image block for MCP', async () => {
    const r = await run({ content: URL_CONTENT, format: 'png', size: 300, fgColor: '#125', bgColor: 'FEDCBA', margin: 4 });
    const bytes = body(r);
    expect(r.json).toStrictEqual({ format: 'png', size: 300, mimeType: 'image/png', bytes: bytes.length });
    expect(r.body?.contentType).toBe('image/png');
    expect(r.content).toStrictEqual([{ type: 'image', mimeType: 'image/png', data: bytes.toString('base64') }]);
    const img = await decodeRaster(bytes);
    expect([img.width, img.height]).toStrictEqual([300, 300]);
    expect(qrText(img)).toBe(URL_CONTENT);
    // Quiet zone is the background; the top-left finder pattern's corner module is dark.
    const moduleCount = 29 + 8; // version 3 for this content at M, plus 2×4 margin
    const modulePx = 300 / moduleCount;
    expect(pixel(img, 2, 2)).toBe('#fedcba');
    expect(pixel(img, Math.floor(4.5 * modulePx), Math.floor(4.5 * modulePx))).toBe('#112255');
    expect(pixel(img, 299, 299)).toBe('#fedcba');
  });

  it('bmp: a real 24-bit BMP of exact size that decodes, with the PNG for MCP', async () => {
    const r = await run({ content: 'BMP ✓ ünïcödé', format: 'bmp', size: 200, fgColor: '00f', bgColor: 'ff0' });
    const bytes = body(r);
    expect(r.json).toStrictEqual({ format: 'bmp', size: 200, mimeType: 'image/bmp', bytes: bytes.length });
    expect(r.body?.contentType).toBe('image/bmp');
    const img = decodeBmp(bytes);
    expect([img.width, img.height, bytes.length]).toStrictEqual([200, 200, 54 + 200 * 600]);
    expect(qrText(img)).toBe('BMP ✓ ünïcödé');
    expect([pixel(img, 0, 0), pixel(img, 199, 0)]).toStrictEqual(['#ffff00', '#ffff00']);
    expect(r.content?.map((c) => c.type + ':' + ('mimeType' in c ? c.mimeType : ''))).toStrictEqual(['image:image/png']);
    const fromPng = await decodeRaster(Buffer.from((r.content![0] as { data: string }).data, 'base64'));
    // The PNG block and the BMP carry the same pixels.
    expect(Buffer.from(fromPng.data).equals(Buffer.from(img.data))).toBe(true);
  });

  it('bmp rows are padded to 4 bytes when size×3 is not a multiple of 4', async () => {
    const r = await run({ content: 'odd', format: 'bmp', size: 65, margin: 2 });
    const img = decodeBmp(body(r));
    expect([img.width, img.height, body(r).length]).toStrictEqual([65, 65, 54 + 196 * 65]);
    expect(qrText(img)).toBe('odd');
  });

  it('svg: an SVG document that rasterises to exact size and decodes; MCP gets PNG + SVG text', async () => {
    const r = await run({ content: URL_CONTENT, size: 256, fgColor: '800000' });
    const bytes = body(r);
    const svg = bytes.toString('utf8');
    expect(r.json).toStrictEqual({ format: 'svg', size: 256, mimeType: 'image/svg+xml', bytes: bytes.length });
    expect(r.body?.contentType).toBe('image/svg+xml');
    expect(svg).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="256" height="256" viewBox="0 0 37 37"/);
    expect(r.content?.map((c) => c.type)).toStrictEqual(['image', 'text']);
    expect(r.content?.[1]).toStrictEqual({ type: 'text', text: svg });
    const img = await decodeRaster(await sharp(bytes, { density: 72 }).png().toBuffer());
    expect([img.width, img.height]).toStrictEqual([256, 256]);
    expect(qrText(img)).toBe(URL_CONTENT);
    expect(pixel(img, 1, 1)).toBe('#ffffff');
    expect(pixel(img, 33, 33)).toBe('#800000');
  });

  it('dataurl: JSON with a PNG data URL that decodes; no binary body', async () => {
    const r = await run({ content: 'data url', format: 'dataurl', size: 128, margin: 1, ecLevel: 'H' });
    expect(r.body).toBe(undefined);
    const dataUrl = (r.json as { dataUrl: string }).dataUrl;
    expect(r.json).toStrictEqual({ format: 'dataurl', dataUrl });
    expect(dataUrl.startsWith('data:image/png;base64,')).toBe(true);
    expect(r.content).toStrictEqual([
      { type: 'image', mimeType: 'image/png', data: dataUrl.slice('data:image/png;base64,'.length) },
      { type: 'text', text: dataUrl },
    ]);
    const img = await decodeRaster(Buffer.from(dataUrl.split(',')[1]!, 'base64'));
    expect([img.width, img.height]).toStrictEqual([128, 128]);
    expect(qrText(img)).toBe('data url');
  });

  it('every level and the extremes of size and margin decode', async () => {
    const cases = [
      { ecLevel: 'L', size: 64, margin: 0 },
      { ecLevel: 'M', size: 1024, margin: 16 },
      { ecLevel: 'Q', size: 333, margin: 3 },
      { ecLevel: 'H', size: 500, margin: 4 },
    ];
    const got = await Promise.all(
      cases.map(async (c) => {
        const r = await run({ content: `level ${c.ecLevel}`, format: 'png', ...c });
        const img = await decodeRaster(body(r));
        return [img.width, qrText(img)];
      }),
    );
    expect(got).toStrictEqual(cases.map((c) => [c.size, `level ${c.ecLevel}`]));
  });

  it('long content (1800 characters at L) still decodes at 1024 px', async () => {
    const content = 'The quick brown fox jumps over the lazy dog. '.repeat(40).slice(0, 1800);
    const r = await run({ content, format: 'png', size: 1024, ecLevel: 'L', margin: 2 });
    expect(qrText(await decodeRaster(body(r)))).toBe(content);
  });
});

describe('qrcode_generate: refusals', () => {
  it('content too long for the level → 400 naming the limit', async () => {
    expect(await failure({ content: 'x'.repeat(1300), ecLevel: 'H' })).toStrictEqual({
      code: 'INVALID_INPUT',
      message: 'Content is too long for a QR code at error-correction level H: 1300 bytes given, at most 1273 fit (byte mode). Shorten it or use a lower level (L holds 2953).',
    });
    expect(await failure({ content: 'A'.repeat(1900), ecLevel: 'H' })).toStrictEqual({
      code: 'INVALID_INPUT',
      message: 'Content is too long for a QR code at error-correction level H: 1900 characters given, at most 1852 fit (alphanumeric mode). Shorten it or use a lower level (L holds 4296).',
    });
    expect(await failure({ content: 'é'.repeat(1200), ecLevel: 'Q' })).toStrictEqual({
      code: 'INVALID_INPUT',
      message: 'Content is too long for a QR code at error-correction level Q: 2400 bytes given, at most 1663 fit (byte mode). Shorten it or use a lower level (L holds 2953).',
    });
  });

  it('an unpaired surrogate in content → 400, not a 500 from the encoder (URIError)', async () => {
    const message = 'content contains an unpaired UTF-16 surrogate, which has no UTF-8 encoding';
    expect(await failure({ content: 'a\ud800b' })).toStrictEqual({ code: 'INVALID_INPUT', message });
    expect(await failure({ content: '\udc00', format: 'png' })).toStrictEqual({ code: 'INVALID_INPUT', message });
    // A proper pair is fine.
    await expect(run({ content: '\ud83d\ude00' })).resolves.toBeDefined();
  });

  it('a size smaller than the module count → 400 naming the minimum', async () => {
    expect(await failure({ content: 'y'.repeat(500), size: 64 })).toStrictEqual({
      code: 'INVALID_INPUT',
      message: 'size 64 is too small for this content: the code is 93 modules wide (margin included), so size must be at least 93 (279 or more scans reliably)',
    });
  });

  it('out-of-range and malformed fields → 400 INVALID_INPUT with the field path', async () => {
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ content: '' }, 'content'],
      [{ content: 'x'.repeat(2001) }, 'content'],
      [{ content: 'x', size: 63 }, 'size'],
      [{ content: 'x', size: 1025 }, 'size'],
      [{ content: 'x', size: 256.5 }, 'size'],
      [{ content: 'x', size: '256' }, 'size'],
      [{ content: 'x', margin: 17 }, 'margin'],
      [{ content: 'x', margin: -1 }, 'margin'],
      [{ content: 'x', fgColor: 'ggg' }, 'fgColor'],
      [{ content: 'x', bgColor: '#12345' }, 'bgColor'],
      [{ content: 'x', fgColor: 'red' }, 'fgColor'],
      [{ content: 'x', ecLevel: 'X' }, 'ecLevel'],
      [{ content: 'x', format: 'gif' }, 'format'],
      [{ content: 'x', fgColor: '#abc', bgColor: 'AABBCC' }, 'fgColor'],
    ];
    const got = await Promise.all(
      bad.map(async ([input]) => {
        try {
          await run(input);
          return 'passed';
        } catch (err) {
          const e = err as ToolError;
          const details = e.details as Array<{ path: string }> | { path: string };
          return `${e.code} ${Array.isArray(details) ? details[0]?.path : details.path}`;
        }
      }),
    );
    expect(got).toStrictEqual(bad.map(([, path]) => `INVALID_INPUT ${path}`));
  });
});
