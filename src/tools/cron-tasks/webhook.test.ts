import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetcher, type Fetcher } from '../../net/fetch.js';
import { attemptDelivery, webhookHeaders } from './webhook.js';

const BIG = 20 * 1024 * 1024;

/** How a receiver's big answer ended: fully sent ('finish') or cut off by the client ('close' first). */
const endings: Record<string, 'finished' | 'cut off'> = {};

/** Paths requested, in order. */
const seen: string[] = [];
/** Answers to /hold, never sent. */
const held: http.ServerResponse[] = [];
let server: http.Server;
let base: string;
let fetcher: Fetcher;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    seen.push(path);
    req.resume();
    req.on('end', () => {
      if (path === '/hold') return void held.push(res);
      res.on('finish', () => (endings[path] ??= 'finished'));
      res.on('close', () => (endings[path] ??= 'cut off'));
      const status = path.startsWith('/503') ? 503 : 200;
      // Chunked, or with its Content-Length declared; written as fast as the client reads.
      res.writeHead(status, { 'content-type': 'text/plain', ...(path.endsWith('/chunked') ? {} : { 'content-length': String(BIG) }) });
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      let sent = 0;
      const pump = () => {
        while (sent < BIG) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fetcher = createFetcher({ fetchAllowPrivate: true, fetchTimeoutMs: 30_000, fetchMaxBytes: BIG });
});

afterAll(async () => {
  await fetcher.close();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const deliver = (path: string) => {
  const body = '{"type":"cron_task.due"}';
  return attemptDelivery(fetcher, base + path, webhookHeaders('whsec_dGVzdA==', 'msg_1', Date.now(), body), body, { timeoutMs: 30_000 });
};

describe('webhook delivery', () => {
  it('regression: a 2xx answer with a 20 MiB body counted as a failure and was retried', async () => {
    const got = await Promise.all([deliver('/200'), deliver('/200/chunked')]);
    expect(got).toStrictEqual([
      { ok: true, retryable: false, status: 200, message: 'HTTP 200' },
      { ok: true, retryable: false, status: 200, message: 'HTTP 200' },
    ]);
    // The rest of the answer was dropped unread: the receiver never finished sending it.
    while (!endings['/200'] || !endings['/200/chunked']) await new Promise((r) => setTimeout(r, 10));
    expect([endings['/200'], endings['/200/chunked']]).toStrictEqual(['cut off', 'cut off']);
  });

  it('a 5xx answer with a 20 MiB body is still judged by its status: retryable', async () => {
    expect(await deliver('/503/chunked')).toStrictEqual({ ok: false, retryable: true, status: 503, message: 'HTTP 503' });
  });
});

describe('webhook delivery with the fetch budget full', () => {
  it('RATE_LIMITED from the fetcher is retryable and the receiver is not asked', async () => {
    const tight = createFetcher({ fetchAllowPrivate: true, fetchTimeoutMs: 30_000, fetchMaxBytes: BIG }, { budget: { maxConcurrent: 1, maxQueue: 0 } });
    const body = '{}';
    const headers = webhookHeaders('whsec_dGVzdA==', 'msg_2', Date.now(), body);
    const ac = new AbortController();
    const first = attemptDelivery(tight, `${base}/hold`, headers, body, { timeoutMs: 30_000, signal: ac.signal });
    while (held.length === 0) await new Promise((r) => setTimeout(r, 10));
    expect(await attemptDelivery(tight, `${base}/200/after-full`, headers, body, { timeoutMs: 30_000 })).toStrictEqual({
      ok: false,
      retryable: true,
      status: null,
      message: 'RATE_LIMITED: Too many URL fetches in progress; retry in a moment',
    });
    expect(seen.filter((p) => p === '/200/after-full')).toStrictEqual([]);
    ac.abort();
    expect(await first).toMatchObject({ ok: false, retryable: true, status: null });
    await tight.close();
  });
});
