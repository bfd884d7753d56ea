import { fc, test } from '@fast-check/vitest';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolError } from '../../errors.js';
import { createFetcher } from '../../net/fetch.js';
import { testConfig, toolHarness, useToolHarness, type ToolHarness } from '../../../test/harness.js';
import { pngHeader, startFixture, type Fixture } from '../../../test/fixtures/media/servers.js';
import { sampleImage } from '../../../test/fixtures/media/images.js';
import { avifEffort, DATA_PATTERN, decodeBase64, imageConvert, sniffFormat } from './image-convert.js';

const t = useToolHarness();
let fixture: Fixture;
let jpeg: Buffer; // 400×300
let transparentPng: Buffer;

beforeAll(async () => {
  jpeg = await sampleImage(400, 300);
  transparentPng = await sharp({ create: { width: 40, height: 20, channels: 4, background: { r: 255, g: 0, b: 0, alpha: 0 } } }).png().toBuffer();
  fixture = await startFixture({
    '/photo.jpg': (_q, res) => void res.writeHead(200, { 'content-type': 'image/jpeg' }).end(jpeg),
    '/mislabelled': (_q, res) => void res.writeHead(200, { 'content-type': 'text/html' }).end(jpeg),
    '/page.html': (_q, res) => void res.writeHead(200, { 'content-type': 'image/png' }).end('<!doctype html><title>not an image</title>'),
    '/huge.png': (_q, res) => void res.writeHead(200, { 'content-type': 'image/png' }).end(pngHeader(20000, 20000)),
    '/missing.png': (_q, res) => void res.writeHead(404, { 'content-type': 'text/plain' }).end('nope'),
    '/real-page.html': (_q, res) => void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>a page</title>'),
    '/moved': (_q, res) => void res.writeHead(301, { location: '/photo.jpg' }).end(),
  });
});
afterAll(async () => {
  await fixture.close();
});

const run = (input: Record<string, unknown>, h: ToolHarness = t, progress?: (p: number, t?: number, m?: string) => Promise<void>) =>
  h.run(imageConvert, input, { progress });
const failure = async (input: Record<string, unknown>, h: ToolHarness = t) => {
  const { code, message } = await h.failure(imageConvert, input);
  return { code, message };
};

async function describeImage(bytes: Uint8Array): Promise<{ format: string | undefined; width: number | undefined; height: number | undefined }> {
  const m = await sharp(bytes).metadata();
  return { format: m.format, width: m.width, height: m.height };
}

describe('image_convert', () => {
  it('converts base64 data to webp by default: bytes, headers, MCP image block, progress', async () => {
    const steps: string[] = [];
    const r = await run({ data: jpeg.toString('base64') }, t, async (p, t, m) => void steps.push(`${p}/${t} ${m}`));
    const body = Buffer.from(r.body!.data);
    expect(r.json).toStrictEqual({ format: 'webp', width: 400, height: 300, bytes: body.length });
    expect([r.body!.contentType, r.body!.headers]).toStrictEqual(['image/webp', { 'x-image-width': '400', 'x-image-height': '300' }]);
    expect(r.content).toStrictEqual([{ type: 'image', mimeType: 'image/webp', data: body.toString('base64') }]);
    expect(await describeImage(body)).toStrictEqual({ format: 'webp', width: 400, height: 300 });
    expect(steps).toStrictEqual(['0/3 decoding data', '1/3 fetched', '2/3 decoded', '3/3 encoded']);
  });

  it('fetches a URL (following a redirect) and converts to every format, keeping the aspect ratio', async () => {
    const cases = [
      { format: 'avif', width: 200 },
      { format: 'png', height: 150 },
      { format: 'jpeg', width: 100, height: 100 },
      { format: 'webp', width: 100, height: 100, fit: 'inside' },
      { format: 'webp', width: 50, height: 80, fit: 'fill' },
    ];
    const got = await Promise.all(
      cases.map(async (c) => {
        const r = await run({ url: `${fixture.url}/moved`, quality: 60, ...c });
        const d = await describeImage(r.body!.data);
        return [r.json.width, r.json.height, d.format, d.width, d.height];
      }),
    );
    expect(got).toStrictEqual([
      [200, 150, 'heif', 200, 150],
      [200, 150, 'png', 200, 150],
      [100, 100, 'jpeg', 100, 100],
      [100, 75, 'webp', 100, 75],
      [50, 80, 'webp', 50, 80],
    ]);
  });

  it('trusts the bytes, not the Content-Type: a JPEG served as text/html converts', async () => {
    const r = await run({ url: `${fixture.url}/mislabelled`, format: 'png' });
    expect(r.json).toMatchObject({ format: 'png', width: 400, height: 300 });
  });

  it('quality changes the output; jpeg flattens transparency on white', async () => {
    const [lo, hi] = await Promise.all([run({ data: jpeg.toString('base64'), format: 'jpeg', quality: 10 }), run({ data: jpeg.toString('base64'), format: 'jpeg', quality: 95 })]);
    expect((lo.json.bytes as number) * 2).toBeLessThan(hi.json.bytes as number);
    const flat = await run({ data: `data:image/png;base64,${transparentPng.toString('base64')}`, format: 'jpeg' });
    const { data } = await sharp(flat.body!.data).raw().toBuffer({ resolveWithObject: true });
    expect([...data.subarray(0, 3)]).toStrictEqual([255, 255, 255]);
    const keep = await run({ data: transparentPng.toString('base64'), format: 'png' });
    expect((await sharp(keep.body!.data).metadata()).hasAlpha).toBe(true);
  });

  it('a non-image → 422 PARSE_ERROR, from data or from a URL that claims image/png', async () => {
    expect(await failure({ data: Buffer.from('just some text, no image here').toString('base64') })).toStrictEqual({
      code: 'PARSE_ERROR',
      message: 'The data is not an image in a supported format (JPEG, PNG, WebP, GIF, AVIF, TIFF)',
    });
    expect(await failure({ url: `${fixture.url}/page.html` })).toStrictEqual({
      code: 'PARSE_ERROR',
      message: 'The fetched content is not an image in a supported format (JPEG, PNG, WebP, GIF, AVIF, TIFF) (the server called it image/png)',
    });
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>').toString('base64');
    expect((await failure({ data: svg })).code).toBe('PARSE_ERROR');
  });

  it('a URL answering a non-image content type with non-image bytes → 502 UPSTREAM_ERROR (wrong content type)', async () => {
    expect(await failure({ url: `${fixture.url}/real-page.html` })).toStrictEqual({
      code: 'UPSTREAM_ERROR',
      message: 'The URL answered with content type "text/html", not an image',
    });
  });

  it('a truncated image → 422', async () => {
    expect(await failure({ data: jpeg.subarray(0, 600).toString('base64') })).toStrictEqual({
      code: 'PARSE_ERROR',
      message: 'The JPEG image is corrupt or cannot be decoded',
    });
  });

  it('a 20000×20000 PNG header → 400 from the header, before any decoding, from data and from a URL', async () => {
    const expected = { code: 'INVALID_INPUT', message: 'The image is 20000×20000 (400 megapixels); the limit is 50 megapixels' };
    // Decoding 400 MP takes minutes or runs out of memory: the refusal comes before the
    // '2/3 decoded' step, which is reported once the size checks pass and the pixels are read.
    for (const [input, first] of [
      [{ data: pngHeader(20000, 20000).toString('base64') }, '0/3 decoding data'],
      [{ url: `${fixture.url}/huge.png` }, '0/3 fetching'],
    ] as const) {
      const steps: string[] = [];
      const { code, message } = await t.failure(imageConvert, input, { progress: async (p, total, m) => void steps.push(`${p}/${total} ${m}`) });
      expect([{ code, message }, steps]).toStrictEqual([expected, [first, '1/3 fetched']]);
    }
  });

  it('an output over the limits → 400 before any work', async () => {
    const tall = await sharp({ create: { width: 1, height: 4000, channels: 3, background: '#000' } }).png().toBuffer();
    expect(await failure({ data: tall.toString('base64'), width: 8000 })).toStrictEqual({
      code: 'INVALID_INPUT',
      message: 'The output would be 8000×32000000; the limits are 16383 pixels a side and 50 megapixels',
    });
  });

  it('input validation: exactly one of url/data, ranges, base64', async () => {
    const bad: Array<Record<string, unknown>> = [
      {},
      { url: `${fixture.url}/photo.jpg`, data: jpeg.toString('base64') },
      { data: jpeg.toString('base64'), format: 'gif' },
      { data: jpeg.toString('base64'), quality: 0 },
      { data: jpeg.toString('base64'), quality: 101 },
      { data: jpeg.toString('base64'), width: 0 },
      { data: jpeg.toString('base64'), height: 8193 },
      { data: jpeg.toString('base64'), width: 10.5 },
      { data: 'not base64 at all!' },
      { data: '' },
    ];
    const got = await Promise.all(bad.map(async (b) => (await failure(b)).code));
    expect(got).toStrictEqual(bad.map(() => 'INVALID_INPUT'));
  });

  it('URL errors: 502 for a 404, 400 for other schemes, 400 URL_NOT_ALLOWED with a blocking fetcher (fixture not hit)', async () => {
    expect(await failure({ url: `${fixture.url}/missing.png` })).toStrictEqual({ code: 'UPSTREAM_ERROR', message: 'The URL answered HTTP 404' });
    expect((await failure({ url: 'file:///etc/passwd' })).code).toBe('URL_NOT_ALLOWED');
    const strict = await toolHarness({ overrides: { fetcher: createFetcher(testConfig(), { allowPrivate: false }) } });
    const before = fixture.hits;
    expect((await failure({ url: `${fixture.url}/photo.jpg` }, strict)).code).toBe('URL_NOT_ALLOWED');
    expect(fixture.hits).toBe(before);
    await strict.close();
  });
});

describe('helpers', () => {
  it('sniffFormat reads signatures, not names', () => {
    const got = [
      Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
      pngHeader(1, 1),
      Buffer.from('GIF89a......'),
      Buffer.from('RIFF\0\0\0\0WEBPVP8 '),
      Buffer.from('II*\0....'),
      Buffer.from('\0\0\0\x1cftypavif\0\0\0\0'),
      Buffer.from('\0\0\0\x18ftypheic\0\0\0\0'),
      Buffer.from('<svg/>'),
      Buffer.alloc(0),
    ].map((b) => sniffFormat(b));
    expect(got).toStrictEqual(['jpeg', 'png', 'gif', 'webp', 'tiff', 'avif', 'heif', null, null]);
  });

  // Regression: the schema allowed any string as data, so a schema-valid request could be refused.
  test.prop(
    [
      fc.constantFrom('', 'data:image/png;base64,', 'DATA:x;BASE64,', 'data:;base64,', 'data:a,b;base64,', ' data:x;base64,', `data:${'x'.repeat(201)};base64,`, 'data:é;base64,'),
      fc.string({ unit: fc.constantFrom(...'Az09+/_-=  \n\t\u00a0,:;é'), maxLength: 14 }),
    ],
    { numRuns: 1000, seed: 29 },
  )('the published data pattern agrees with decodeBase64', (prefix, body) => {
    const data = prefix + body;
    let decodes = true;
    try {
      decodeBase64(data);
    } catch {
      decodes = false;
    }
    expect(new RegExp(DATA_PATTERN, 'u').test(data), JSON.stringify(data)).toBe(decodes);
  });

  it('decodeBase64 accepts padding, whitespace, base64url and data: prefixes; refuses junk', () => {
    expect([decodeBase64('aGk='), decodeBase64('aG\nk='), decodeBase64('data:image/png;base64,aGk'), decodeBase64('-_8')].map((b) => b.toString('hex'))).toStrictEqual([
      '6869',
      '6869',
      '6869',
      'fbff',
    ]);
    expect(() => decodeBase64('a')).toThrow(ToolError);
    expect(() => decodeBase64('ab$c')).toThrow(ToolError);
  });

  it('avifEffort falls as images grow', () => {
    expect([800_000, 1_200_000, 3_000_000, 10_000_000, 50_000_000].map(avifEffort)).toStrictEqual([3, 3, 2, 1, 0]);
  });
});
