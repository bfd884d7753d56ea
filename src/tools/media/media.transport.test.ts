// qrcode_generate and image_convert through the real REST projection (app.request) and a real
// MCP SDK client: binary bodies, headers, image blocks, progress notifications, errors.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import jsQRModule from 'jsqr';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetcher } from '../../net/fetch.js';
import { testConfig, mcpError as harnessMcpError, startTestApp, useTestApp } from '../../../test/harness.js';
import { sampleImage } from '../../../test/fixtures/media/images.js';
import { startFixture, type Fixture } from '../../../test/fixtures/media/servers.js';

// callTool's result type is a union the harness helper's parameter does not accept as is.
const mcpError = (r: unknown) => harnessMcpError(r as Parameters<typeof harnessMcpError>[0]);

const jsQR = jsQRModule as unknown as typeof jsQRModule.default;

async function qrText(bytes: Uint8Array): Promise<string | null> {
  const { data, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return jsQR(new Uint8ClampedArray(data), info.width, info.height)?.data ?? null;
}

const t = useTestApp({ env: { FETCH_TIMEOUT_MS: '700' } });
let mcp: Client;
let fixture: Fixture;
let jpeg: Buffer;
/** The dripping route's connections: opened and closed (by the client: the drip never ends by itself). */
const drip = { onOpen: () => {}, onClose: () => {} };

beforeAll(async () => {
  jpeg = await sampleImage(320, 240);
  fixture = await startFixture({
    '/photo.jpg': (_q, res) => void res.writeHead(200, { 'content-type': 'image/jpeg' }).end(jpeg),
    '/drip': (_q, res) => {
      res.writeHead(200, { 'content-type': 'image/png' });
      const timer = setInterval(() => res.write('x'), 50);
      drip.onOpen();
      res.on('close', () => {
        clearInterval(timer);
        drip.onClose();
      });
    },
  });
  mcp = await t.mcpClient();
});
afterAll(async () => {
  await fixture.close();
});

describe('REST', () => {
  it('POST /api/qrcode answers the image bytes with their Content-Type per format', async () => {
    const got: Array<[number, string | null, string | null]> = [];
    for (const format of ['png', 'svg', 'bmp'] as const) {
      const res = await t.request('POST', '/api/qrcode', { content: 'rest qr', format, size: 160 });
      const bytes = new Uint8Array(await res.arrayBuffer());
      const raster = format === 'bmp' ? null : await qrText(format === 'svg' ? await sharp(bytes).png().toBuffer() : bytes);
      got.push([res.status, res.headers.get('content-type'), format === 'bmp' ? Buffer.from(bytes.subarray(0, 2)).toString() : raster]);
    }
    expect(got).toStrictEqual([
      [200, 'image/png', 'rest qr'],
      [200, 'image/svg+xml', 'rest qr'],
      [200, 'image/bmp', 'BM'],
    ]);
  });

  it('POST /api/qrcode with format dataurl answers flat JSON', async () => {
    const res = await t.request('POST', '/api/qrcode', { content: 'json please', format: 'dataurl' });
    const body = (await res.json()) as { success: boolean; format: string; dataUrl: string };
    expect([res.status, Object.keys(body), body.success, body.format]).toStrictEqual([200, ['success', 'format', 'dataUrl'], true, 'dataurl']);
    expect(await qrText(Buffer.from(body.dataUrl.split(',')[1]!, 'base64'))).toBe('json please');
  });

  it('POST /api/qrcode refuses out-of-range input with 400 and the field', async () => {
    const res = await t.request('POST', '/api/qrcode', { content: 'x', size: 2000 });
    const body = (await res.json()) as { success: boolean; error: { code: string; details: Array<{ path: string }> } };
    expect([res.status, body.success, body.error.code, body.error.details[0]?.path]).toStrictEqual([400, false, 'INVALID_INPUT', 'size']);
  });

  it('POST /api/image-convert answers bytes, Content-Type and X-Image-Width/Height', async () => {
    const res = await t.request('POST', '/api/image-convert', { url: `${fixture.url}/photo.jpg`, format: 'png', width: 160 });
    const bytes = Buffer.from(await res.arrayBuffer());
    const meta = await sharp(bytes).metadata();
    expect([res.status, res.headers.get('content-type'), res.headers.get('x-image-width'), res.headers.get('x-image-height'), meta.format, meta.width, meta.height]).toStrictEqual([
      200,
      'image/png',
      '160',
      '120',
      'png',
      160,
      120,
    ]);
  });

  it('a dripping image server gets 504 while /healthz keeps answering', async () => {
    const opened = new Promise<void>((r) => (drip.onOpen = r));
    const closed = new Promise<void>((r) => (drip.onClose = r));
    let settled = false;
    const pending = t.request('POST', '/api/image-convert', { url: `${fixture.url}/drip` }).finally(() => (settled = true));
    await opened;
    const health = await t.request('GET', '/healthz');
    // The order of events, not a time: /healthz answers while the drip is being read.
    expect([health.status, await health.json(), settled]).toStrictEqual([200, { status: 'ok' }, false]);
    const res = await pending;
    expect([res.status, ((await res.json()) as { error: { code: string } }).error.code]).toStrictEqual([504, 'UPSTREAM_TIMEOUT']);
    // The drip, endless otherwise, was cut off: the fixture saw the connection closed.
    await closed;
  });

  it('a blocking fetcher answers 400 URL_NOT_ALLOWED and the fixture is never hit', async () => {
    const strict = await startTestApp({ overrides: { fetcher: createFetcher(testConfig(), { allowPrivate: false }) } });
    const before = fixture.hits;
    const res = await strict.request('POST', '/api/image-convert', { url: `http://2130706433:${fixture.port}/photo.jpg` });
    const body = (await res.json()) as { error: { code: string } };
    expect([res.status, body.error.code, fixture.hits]).toStrictEqual([400, 'URL_NOT_ALLOWED', before]);
    await strict.close();
  });
});

describe('MCP', () => {
  it('qrcode_generate svg: a PNG image block, the SVG text, then the JSON; structuredContent', async () => {
    const r = await mcp.callTool({ name: 'qrcode_generate', arguments: { content: 'mcp qr', size: 128 } });
    const content = r.content as Array<{ type: string; text?: string; data?: string; mimeType?: string }>;
    expect(content.map((c) => `${c.type}${c.mimeType ? ':' + c.mimeType : ''}`)).toStrictEqual(['image:image/png', 'text', 'text']);
    expect(content[1]!.text).toMatch(/^<\?xml[^]*<svg [^]*<\/svg>\n$/);
    expect(r.structuredContent).toStrictEqual({ format: 'svg', size: 128, mimeType: 'image/svg+xml', bytes: Buffer.byteLength(content[1]!.text!) });
    expect(JSON.parse(content[2]!.text!)).toStrictEqual(r.structuredContent);
    expect(await qrText(Buffer.from(content[0]!.data!, 'base64'))).toBe('mcp qr');
  });

  it('qrcode_generate dataurl: image block + data URL text; too-long content is an error result', async () => {
    const r = await mcp.callTool({ name: 'qrcode_generate', arguments: { content: 'dataurl', format: 'dataurl' } });
    const content = r.content as Array<{ type: string; text?: string; data?: string }>;
    expect(content[1]).toStrictEqual({ type: 'text', text: `data:image/png;base64,${content[0]!.data}` });
    expect(r.structuredContent).toStrictEqual({ format: 'dataurl', dataUrl: content[1]!.text });
    const bad = await mcp.callTool({ name: 'qrcode_generate', arguments: { content: 'z'.repeat(1500), ecLevel: 'H' } });
    expect([bad.isError, bad.structuredContent, mcpError(bad).code]).toStrictEqual([true, undefined, 'INVALID_INPUT']);
    expect(mcpError(bad).message).toMatch(/at most 1273 fit/);
  });

  it('image_convert: image block + {format,width,height,bytes}, with progress notifications', async () => {
    const progress: number[] = [];
    const r = await mcp.callTool({ name: 'image_convert', arguments: { data: jpeg.toString('base64'), format: 'jpeg', height: 60 } }, undefined, {
      onprogress: (p) => void progress.push(p.progress),
    });
    const content = r.content as Array<{ type: string; data?: string; mimeType?: string }>;
    const bytes = Buffer.from(content[0]!.data!, 'base64');
    expect([content[0]!.type, content[0]!.mimeType]).toStrictEqual(['image', 'image/jpeg']);
    expect(r.structuredContent).toStrictEqual({ format: 'jpeg', width: 80, height: 60, bytes: bytes.length });
    expect((await sharp(bytes).metadata()).width).toBe(80);
    expect(progress).toStrictEqual([0, 1, 2, 3]);
  });

  it('image_convert: a non-image is an error result (422 PARSE_ERROR)', async () => {
    const r = await mcp.callTool({ name: 'image_convert', arguments: { data: Buffer.from('hello').toString('base64') } });
    expect([r.isError, mcpError(r).code]).toStrictEqual([true, 'PARSE_ERROR']);
  });
});
