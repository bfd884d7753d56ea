import { EventEmitter, once } from 'node:events';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ToolError } from '../errors.js';
import { startFixture, type Fixture } from '../../test/fixtures/media/servers.js';
import { createFetcher, isPublicAddress, type FetcherOptions, type Resolver } from './fetch.js';

const BASE = { fetchAllowPrivate: true, fetchTimeoutMs: 5_000, fetchMaxBytes: 1024 * 1024 };

/** A fetcher that refuses private space (loopback fixtures included unless exempted). */
const strict = (o: FetcherOptions = {}) => createFetcher({ ...BASE, fetchAllowPrivate: false }, o);
const permissive = (o: FetcherOptions = {}) => createFetcher(BASE, o);

async function failure(p: Promise<unknown>): Promise<{ code: string; status: number; message: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ToolError) return { code: err.code, status: err.status, message: err.message };
    throw err;
  }
  throw new Error('expected a failure');
}

const BLOCKED_MSG = 'The URL points to an address that is not allowed (private, loopback, link-local or otherwise non-public)';
const blocked = { code: 'URL_NOT_ALLOWED', status: 400, message: BLOCKED_MSG };

// Targets: one fixture per loopback address; every blocked request must leave its hit count at 0.
let a: Fixture; // 127.0.0.1: the "allowed" fixture (exempted where a test needs it)
let b: Fixture; // 127.0.0.2
let v6: Fixture; // ::1

/** Emits 'closed' with the route's path when a client hangs up on an endless route (drip, silent, bomb). */
const hangups = new EventEmitter();
/** Resolves when the fixture sees the client close the connection of `route`. */
const hungUp = (route: string) =>
  new Promise<void>((resolve) => {
    const on = (p: string) => {
      if (p !== route) return;
      hangups.off('closed', on);
      resolve();
    };
    hangups.on('closed', on);
  });

/** A gzip stream of zeros that never ends: only the decoded-size cap can stop a reader. */
function endlessBomb(res: import('node:http').ServerResponse): void {
  res.writeHead(200, { 'content-type': 'image/png', 'content-encoding': 'gzip' });
  const gz = zlib.createGzip({ level: 9 });
  gz.pipe(res);
  const zeros = Buffer.alloc(1024 * 1024);
  const pump = () => {
    while (!res.destroyed && gz.write(zeros));
    if (!res.destroyed) gz.once('drain', pump);
  };
  res.on('close', () => {
    gz.destroy();
    hangups.emit('closed', '/bomb');
  });
  pump();
}

beforeAll(async () => {
  const routes = {
    '/': (_q: unknown, res: import('node:http').ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/plain; charset=UTF-8', 'x-fixture': 'yes' }).end('hello');
    },
  };
  b = await startFixture(routes, '127.0.0.2');
  v6 = await startFixture(routes, '::1');
  a = await startFixture({
    ...routes,
    '/to-b': (_q, res) => void res.writeHead(302, { location: `${b.url}/` }).end(),
    '/to-b-decimal': (_q, res) => void res.writeHead(301, { location: `http://2130706434:${b.port}/` }).end(),
    '/to-file': (_q, res) => void res.writeHead(302, { location: 'file:///etc/passwd' }).end(),
    '/chain': (req, res) => {
      const n = Number(new URL(req.url!, 'http://x').searchParams.get('n'));
      if (n <= 0) res.writeHead(200, { 'content-type': 'text/plain' }).end('end of chain');
      else res.writeHead(307, { location: `/chain?n=${n - 1}` }).end();
    },
    '/see-other': (_q, res) => void res.writeHead(303, { location: '/echo' }).end(),
    '/echo': (req, res, body) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({ method: req.method, body: body.toString(), auth: req.headers.authorization ?? null, ct: req.headers['content-type'] ?? null }),
      );
    },
    '/to-v6-echo': (_q, res) => void res.writeHead(302, { location: `${v6.url}/` }).end(),
    '/gzip': (_q, res) => void res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end(zlib.gzipSync('<p>zipped</p>')),
    '/br': (_q, res) => void res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'br' }).end(zlib.brotliCompressSync('<p>brotli</p>')),
    '/deflate-raw': (_q, res) => void res.writeHead(200, { 'content-encoding': 'deflate' }).end(zlib.deflateRawSync('raw deflate')),
    '/bomb': (_q, res) => endlessBomb(res),
    '/big': (_q, res) => void res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(Buffer.alloc(2 * 1024 * 1024, 1)),
    '/big-chunked': (_q, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      for (let i = 0; i < 32; i++) res.write(Buffer.alloc(64 * 1024, 2));
      res.end();
    },
    '/drip': (_q, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const t = setInterval(() => res.write('.'), 100);
      res.on('close', () => {
        clearInterval(t);
        hangups.emit('closed', '/drip');
      });
    },
    '/silent': (_q, res) => {
      // Never answers.
      res.on('close', () => hangups.emit('closed', '/silent'));
    },
    '/not-gzip': (_q, res) => void res.writeHead(200, { 'content-encoding': 'gzip' }).end('plain text, not gzip'),
    '/weird-encoding': (_q, res) => void res.writeHead(200, { 'content-encoding': 'compress' }).end('x'),
    '/html-404': (_q, res) => void res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>gone</h1>'),
  });
});

afterAll(async () => {
  await Promise.all([a.close(), b.close(), v6.close()]);
});

describe('isPublicAddress', () => {
  it('accepts public unicast only, judging IPv4-mapped IPv6 by the IPv4 inside', () => {
    const cases: Record<string, boolean> = {
      '8.8.8.8': true,
      '1.1.1.1': true,
      '2606:4700::1111': true,
      '::ffff:8.8.8.8': true,
      '127.0.0.1': false,
      '127.0.0.2': false,
      '10.1.2.3': false,
      '172.16.0.1': false,
      '192.168.1.1': false,
      '169.254.169.254': false,
      '100.64.0.1': false,
      '0.0.0.0': false,
      '224.0.0.1': false,
      '255.255.255.255': false,
      '::1': false,
      '::': false,
      '::ffff:127.0.0.2': false,
      '::ffff:7f00:2': false,
      '::ffff:169.254.169.254': false,
      '64:ff9b::7f00:1': false,
      'fe80::1': false,
      'fc00::1': false,
      'ff02::1': false,
      'not an address': false,
      '': false,
    };
    const got = Object.fromEntries(Object.keys(cases).map((k) => [k, isPublicAddress(k)]));
    expect(got).toStrictEqual(cases);
  });
});

describe('fetcher: allowed requests', () => {
  it('fetches a fixture and returns final URL, status, headers, decoded body and content type', async () => {
    const f = permissive();
    const before = a.hits;
    const r = await f.fetch(`${a.url}/`);
    expect({ ...r, headers: { 'x-fixture': r.headers['x-fixture'], 'content-type': r.headers['content-type'] }, body: r.body.toString() }).toStrictEqual({
      url: `${a.url}/`,
      status: 200,
      headers: { 'x-fixture': 'yes', 'content-type': 'text/plain; charset=UTF-8' },
      body: 'hello',
      contentType: 'text/plain',
      charset: 'utf-8',
      redirects: 0,
    });
    expect(a.hits).toBe(before + 1);
    expect(a.lastHeaders?.['accept-encoding']).toBe('gzip, deflate, br');
    await f.close();
  });

  it('follows up to 5 redirects and reports the final URL; a 6th is refused', async () => {
    const f = permissive();
    const r = await f.fetch(`${a.url}/chain?n=5`);
    expect([r.url, r.status, r.redirects, r.body.toString()]).toStrictEqual([`${a.url}/chain?n=0`, 200, 5, 'end of chain']);
    expect(await failure(f.fetch(`${a.url}/chain?n=6`))).toStrictEqual({
      code: 'UPSTREAM_ERROR',
      status: 502,
      message: 'Too many redirects (more than 5)',
    });
    await f.close();
  });

  it('returns the 3xx itself when maxRedirects is 0 (webhooks)', async () => {
    const f = permissive();
    const r = await f.fetch(`${a.url}/chain?n=1`, { method: 'POST', body: '{}', maxRedirects: 0 });
    expect([r.status, r.headers['location'], r.url]).toStrictEqual([307, '/chain?n=0', `${a.url}/chain?n=1`]);
    await f.close();
  });

  it('POSTs a body with headers; 303 turns the POST into a GET', async () => {
    const f = permissive();
    const direct = await f.fetch(`${a.url}/echo`, { method: 'POST', body: '{"x":1}', headers: { 'Content-Type': 'application/json', Host: 'evil' } });
    expect(JSON.parse(direct.body.toString())).toStrictEqual({ method: 'POST', body: '{"x":1}', auth: null, ct: 'application/json' });
    const r = await f.fetch(`${a.url}/see-other`, { method: 'POST', body: 'data', headers: { 'content-type': 'text/plain', authorization: 'Bearer t' } });
    expect(JSON.parse(r.body.toString())).toStrictEqual({ method: 'GET', body: '', auth: 'Bearer t', ct: null });
    await f.close();
  });

  it('drops Authorization when a redirect leaves the origin', async () => {
    const f = permissive();
    await f.fetch(`${a.url}/to-v6-echo`, { headers: { authorization: 'Bearer secret', 'x-keep': '1' } });
    expect([v6.lastHeaders?.authorization, v6.lastHeaders?.['x-keep']]).toStrictEqual([undefined, '1']);
    await f.close();
  });

  it('decodes gzip, brotli and raw deflate bodies', async () => {
    const f = permissive();
    const bodies = await Promise.all(['/gzip', '/br', '/deflate-raw'].map(async (p) => (await f.fetch(a.url + p)).body.toString()));
    expect(bodies).toStrictEqual(['<p>zipped</p>', '<p>brotli</p>', 'raw deflate']);
    await f.close();
  });

  it('returns non-2xx answers as results; contentTypes is enforced on 2xx only', async () => {
    const f = permissive();
    const r = await f.fetch(`${a.url}/html-404`, { contentTypes: ['image/'] });
    expect([r.status, r.contentType, r.body.toString()]).toStrictEqual([404, 'text/html', '<h1>gone</h1>']);
    expect(await failure(f.fetch(`${a.url}/gzip`, { contentTypes: ['image/', 'application/pdf'] }))).toStrictEqual({
      code: 'UPSTREAM_ERROR',
      status: 502,
      message: 'The URL answered with content type "text/html", expected image/ or application/pdf',
    });
    await f.close();
  });

  it('resolves host names through the injected resolver and sends the name as Host', async () => {
    const resolver: Resolver = async (h) => (h === 'good.test' ? [{ address: '127.0.0.1', family: 4 }] : []);
    const f = strict({ resolver, allowAddresses: ['127.0.0.1'] });
    const r = await f.fetch(`http://good.test:${a.port}/`);
    expect([r.status, r.body.toString(), a.lastHeaders?.host]).toStrictEqual([200, 'hello', `good.test:${a.port}`]);
    expect(await failure(f.fetch(`http://nowhere.test:${a.port}/`))).toStrictEqual({
      code: 'UPSTREAM_ERROR',
      status: 502,
      message: "The URL's host name could not be resolved",
    });
    await f.close();
  });
});

describe('fetcher: refused targets never see a request', () => {
  // [url, the fixture that would receive it]; each is first proven reachable (positive control).
  const targets: Array<[string, () => string, () => Fixture]> = [
    ['127.0.0.2', () => `http://127.0.0.2:${b.port}/`, () => b],
    ['2130706434', () => `http://2130706434:${b.port}/`, () => b],
    ['0177.0.0.2', () => `http://0177.0.0.2:${b.port}/`, () => b],
    ['0x7f.0.0.2', () => `http://0x7f.0.0.2:${b.port}/`, () => b],
    ['[::ffff:127.0.0.2]', () => `http://[::ffff:127.0.0.2]:${b.port}/`, () => b],
    ['[::1]', () => `http://[::1]:${v6.port}/`, () => v6],
    ['0.0.0.0', () => `http://0.0.0.0:${a.port}/`, () => a],
    ['localhost', () => `http://localhost:${a.port}/`, () => a],
  ];

  for (const [name, url, fixture] of targets) {
    it(`refuses ${name} with 400 URL_NOT_ALLOWED and the fixture's hit count unchanged`, async () => {
      const f = strict();
      const before = fixture().hits;
      expect(await failure(f.fetch(url()))).toStrictEqual(blocked);
      expect(fixture().hits).toBe(before);
      // Positive control: the same URL does reach the fixture when private space is allowed.
      const p = permissive();
      expect((await p.fetch(url())).status).toBe(200);
      expect(fixture().hits).toBe(before + 1);
      await Promise.all([f.close(), p.close()]);
    });
  }

  it('refuses 169.254.169.254 (cloud metadata) at once', async () => {
    const f = strict();
    expect(await failure(f.fetch('http://169.254.169.254/latest/meta-data/'))).toStrictEqual(blocked);
    // "At once": the URL check alone refuses it, with no connect attempt and no resolver involved.
    expect(() => f.checkUrl('http://169.254.169.254/latest/meta-data/')).toThrow(BLOCKED_MSG);
    await f.close();
  });

  it('refuses a redirect from an allowed fixture to a blocked one (literal and decimal forms)', async () => {
    const f = strict({ allowAddresses: ['127.0.0.1'] });
    expect((await f.fetch(`${a.url}/`)).status).toBe(200); // the allowed fixture is reachable
    const before = b.hits;
    expect(await failure(f.fetch(`${a.url}/to-b`))).toStrictEqual(blocked);
    expect(await failure(f.fetch(`${a.url}/to-b-decimal`))).toStrictEqual(blocked);
    expect(b.hits).toBe(before);
    expect(await failure(f.fetch(`${a.url}/to-file`))).toStrictEqual({ code: 'URL_NOT_ALLOWED', status: 400, message: 'Only http and https URLs can be fetched' });
    await f.close();
  });

  it('refuses a host name whose resolver answers a private address, checking every address', async () => {
    const resolver: Resolver = async (h) =>
      h === 'evil.test'
        ? [{ address: '127.0.0.2', family: 4 }]
        : h === 'mixed.test'
          ? [{ address: '127.0.0.1', family: 4 }, { address: '127.0.0.2', family: 4 }]
          : [{ address: '::ffff:127.0.0.2', family: 6 }];
    const f = strict({ resolver, allowAddresses: ['127.0.0.1'] });
    const [ba, bb] = [a.hits, b.hits];
    expect(await failure(f.fetch(`http://evil.test:${b.port}/`))).toStrictEqual(blocked);
    expect(await failure(f.fetch(`http://mixed.test:${a.port}/`))).toStrictEqual(blocked);
    expect(await failure(f.fetch(`http://mapped.test:${b.port}/`))).toStrictEqual(blocked);
    expect([a.hits, b.hits]).toStrictEqual([ba, bb]);
    await f.close();
  });

  it('refuses other schemes, credentials and bad ports; a non-URL is INVALID_INPUT', async () => {
    const f = strict();
    const got = await Promise.all(
      ['ftp://example.com/', 'file:///etc/passwd', 'javascript:alert(1)', 'http://user:pw@example.com/', 'http://example.com:25/', 'not a url'].map(async (u) => {
        const e = await failure(f.fetch(u));
        return `${e.code} ${e.message}`;
      }),
    );
    expect(got).toStrictEqual([
      'URL_NOT_ALLOWED Only http and https URLs can be fetched',
      'URL_NOT_ALLOWED Only http and https URLs can be fetched',
      'URL_NOT_ALLOWED Only http and https URLs can be fetched',
      'URL_NOT_ALLOWED URLs with credentials (user:password@) are not allowed',
      'URL_NOT_ALLOWED Port 25 is not allowed',
      'INVALID_INPUT Not a valid absolute URL',
    ]);
    await f.close();
  });

  it('fuzz: any spelling of a loopback, private or link-local IPv4 literal is refused by checkUrl', () => {
    const f = strict();
    const privateV4 = fc.oneof(
      fc.tuple(fc.constant(127), fc.nat(255), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(10), fc.nat(255), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(192), fc.constant(168), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(169), fc.constant(254), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(0), fc.nat(255), fc.nat(255), fc.nat(255)),
    );
    fc.assert(
      fc.property(privateV4, fc.integer({ min: 0, max: 3 }), (o, style) => {
        const n = ((o[0] << 24) >>> 0) + (o[1] << 16) + (o[2] << 8) + o[3];
        const host = [
          o.join('.'),
          String(n),
          o.map((x) => `0${x.toString(8)}`).join('.'),
          o.map((x) => `0x${x.toString(16)}`).join('.'),
        ][style]!;
        const e = (() => {
          try {
            f.checkUrl(`http://${host}/`);
            return null;
          } catch (err) {
            return (err as ToolError).code;
          }
        })();
        return e === 'URL_NOT_ALLOWED';
      }),
      { numRuns: 300 },
    );
  });

  it('fuzz: a stubbed resolver answering any non-public address is refused before connecting', async () => {
    const nonPublic = fc.constantFrom('127.0.0.1', '10.0.0.1', '172.31.255.255', '192.168.0.10', '169.254.169.254', '100.100.100.100', '0.0.0.0', '::1', 'fe80::1', 'fd12::1', '::ffff:10.0.0.1', '::ffff:127.0.0.1', '224.0.0.251');
    await fc.assert(
      fc.asyncProperty(fc.array(nonPublic, { minLength: 1, maxLength: 4 }), async (addrs) => {
        const before = a.hits;
        const f = strict({ resolver: async () => addrs.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })) });
        const e = await failure(f.fetch(`http://rebind.test:${a.port}/`));
        await f.close();
        return e.code === 'URL_NOT_ALLOWED' && a.hits === before;
      }),
      { numRuns: 40 },
    );
  });
});

describe('fetcher: hostile servers are cut off fast', () => {
  it('a gzip bomb is stopped once the decoded size passes the cap', async () => {
    const f = permissive();
    const cut = hungUp('/bomb');
    expect(await failure(f.fetch(`${a.url}/bomb`))).toStrictEqual({ code: 'UPSTREAM_ERROR', status: 502, message: 'The response body is larger than 1048576 bytes' });
    // The bomb inflates without end: only the cap stops it, and the fixture sees the fetcher hang up.
    await cut;
    await f.close();
  });

  it('an oversized body is refused, with and without Content-Length', async () => {
    const f = permissive();
    const e1 = await failure(f.fetch(`${a.url}/big`));
    const e2 = await failure(f.fetch(`${a.url}/big-chunked`));
    const e3 = await failure(f.fetch(`${a.url}/`, { maxBytes: 3 }));
    expect([e1.code, e2.code, e3.message]).toStrictEqual(['UPSTREAM_ERROR', 'UPSTREAM_ERROR', 'The response body is larger than 3 bytes']);
    await f.close();
  });

  it('a dripping server is cut off at the overall deadline', async () => {
    const f = createFetcher({ ...BASE, fetchTimeoutMs: 600 });
    const cut = hungUp('/drip');
    const t0 = Date.now();
    expect(await failure(f.fetch(`${a.url}/drip`))).toStrictEqual({ code: 'UPSTREAM_TIMEOUT', status: 504, message: 'The URL did not answer in time' });
    // Not before the deadline (a lower bound: a loaded machine only makes it later).
    expect(Date.now() - t0).toBeGreaterThanOrEqual(550);
    // The drip never ends: only the deadline ends the fetch, and the fixture sees it hang up.
    await cut;
    await f.close();
  });

  it('a server that never answers times out; a per-call timeout is honoured', async () => {
    // The fetcher's own deadline is longer than the test may run: only the per-call timeout can end it.
    const f = createFetcher({ ...BASE, fetchTimeoutMs: 3_600_000 });
    const cut = hungUp('/silent');
    expect((await failure(f.fetch(`${a.url}/silent`, { timeoutMs: 300 }))).code).toBe('UPSTREAM_TIMEOUT');
    await cut;
    await f.close();
  });

  it('a cancelled caller stops the fetch', async () => {
    const f = permissive();
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    expect(await failure(f.fetch(`${a.url}/silent`, { signal: ac.signal }))).toStrictEqual({
      code: 'UPSTREAM_TIMEOUT',
      status: 504,
      message: 'The request was cancelled',
    });
    await f.close();
  });

  it('bad encodings, refused connections: 502 with generic messages', async () => {
    const f = permissive();
    const closed = await startFixture({});
    const port = closed.port;
    await closed.close();
    const got = await Promise.all([`${a.url}/not-gzip`, `${a.url}/weird-encoding`, `http://127.0.0.1:${port}/`].map(async (u) => failure(f.fetch(u))));
    expect(got).toStrictEqual([
      { code: 'UPSTREAM_ERROR', status: 502, message: 'The response body could not be decoded' },
      { code: 'UPSTREAM_ERROR', status: 502, message: 'The response uses an unsupported content encoding' },
      { code: 'UPSTREAM_ERROR', status: 502, message: 'Could not connect to the URL' },
    ]);
    await f.close();
  });
});
