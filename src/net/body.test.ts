import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixture, type Fixture } from '../../test/fixtures/media/servers.js';
import { createFetcher, type Fetcher } from './fetch.js';

let site: Fixture;
let f: Fetcher;
const bomb = zlib.gzipSync(Buffer.alloc(50 * 1024 * 1024), { level: 9 });

beforeAll(async () => {
  site = await startFixture({
    '/small': (_q, res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end('hello'),
    '/declared': (_q, res) => void res.writeHead(200, { 'content-length': String(2 * 1024 * 1024) }).end(Buffer.alloc(2 * 1024 * 1024, 0x61)),
    '/bomb': (_q, res) => void res.writeHead(200, { 'content-encoding': 'gzip' }).end(bomb),
  });
  f = createFetcher({ fetchAllowPrivate: true, fetchTimeoutMs: 10_000, fetchMaxBytes: 1024 * 1024 });
});

afterAll(async () => {
  await Promise.all([f.close(), site.close()]);
});

describe("overflow: 'truncate'", () => {
  it('keeps the first maxBytes decoded bytes of a declared, a compressed and a short body', async () => {
    const get = async (path: string, maxBytes: number) => (await f.fetch(site.url + path, { maxBytes, overflow: 'truncate' })).body;
    const [declared, bomb1k, small] = await Promise.all([get('/declared', 3), get('/bomb', 1000), get('/small', 100)]);
    expect([declared.toString(), bomb1k.equals(Buffer.alloc(1000)), small.toString()]).toStrictEqual(['aaa', true, 'hello']);
  });

  it("without it the same bodies are refused (502), as before", async () => {
    const codes = await Promise.all(['/declared', '/bomb'].map((p) => f.fetch(site.url + p, { maxBytes: 3 }).then(() => 'ok', (e: { code: string; message: string }) => `${e.code} ${e.message}`)));
    expect(codes).toStrictEqual(['UPSTREAM_ERROR The response body is larger than 3 bytes', 'UPSTREAM_ERROR The response body is larger than 3 bytes']);
  });
});
