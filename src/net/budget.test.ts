import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolError } from '../errors.js';
import { FetchBudget } from './budget.js';
import { createFetcher, type FetcherOptions } from './fetch.js';

const BASE = { fetchAllowPrivate: true, fetchTimeoutMs: 30_000, fetchMaxBytes: 20 * 1024 * 1024 };

/**
 * A loopback server that holds every request until released, counting requests in progress and
 * connections opened, overall and per address it listens on.
 */
interface Counter {
  urls: string[];
  active: number;
  maxActive: number;
  activeByHost: Map<string, number>;
  maxByHost: Map<string, number>;
  /** Connections opened, per address. */
  connections: Map<string, number>;
  requests: number;
  /** Answers held requests; with `all`, answers later ones at once too. */
  release(all?: boolean): void;
  close(): Promise<void>;
}

async function startCounter(hosts: string[]): Promise<Counter> {
  const held: Array<() => void> = [];
  let open = false;
  const servers: http.Server[] = [];
  const c: Counter = {
    urls: [],
    active: 0,
    maxActive: 0,
    activeByHost: new Map(),
    maxByHost: new Map(),
    connections: new Map(),
    requests: 0,
    release(all = false) {
      if (all) open = true;
      for (const answer of held.splice(0)) answer();
    },
    close: async () => {
      c.release(true);
      await Promise.all(servers.map((s) => new Promise<void>((r) => (s.closeAllConnections(), s.close(() => r())))));
    },
  };
  for (const host of hosts) {
    const server = http.createServer((req, res) => {
      c.requests++;
      c.active++;
      c.maxActive = Math.max(c.maxActive, c.active);
      const n = (c.activeByHost.get(host) ?? 0) + 1;
      c.activeByHost.set(host, n);
      c.maxByHost.set(host, Math.max(c.maxByHost.get(host) ?? 0, n));
      const answer = () => {
        c.active--;
        c.activeByHost.set(host, c.activeByHost.get(host)! - 1);
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      };
      req.resume();
      if (open) answer();
      else held.push(answer);
    });
    server.on('connection', () => c.connections.set(host, (c.connections.get(host) ?? 0) + 1));
    await new Promise<void>((r) => server.listen(0, host, () => r()));
    servers.push(server);
    c.urls.push(`http://${host}:${(server.address() as AddressInfo).port}/`);
  }
  return c;
}

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 10));
}

const outcome = (p: Promise<{ status: number }>) =>
  p.then(
    (r) => r.status,
    (e: unknown) => (e instanceof ToolError ? { code: e.code, message: e.message, details: e.details, headers: e.headers } : e),
  );

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});

async function setup(hosts: string[], budget: FetcherOptions['budget']) {
  const server = await startCounter(hosts);
  const fetcher = createFetcher(BASE, { budget });
  cleanup.push(() => fetcher.close(), () => server.close());
  return { server, fetcher };
}

describe('fetch budget', () => {
  it('bounds concurrent fetches in all and per host: 12 calls to two hosts never exceed 3 at once, 2 per host', async () => {
    const { server, fetcher } = await setup(['127.0.0.1', '127.0.0.2'], { maxConcurrent: 3, maxPerHost: 2, maxQueue: 50, maxWaitMs: 60_000 });
    const calls = Array.from({ length: 12 }, (_, i) => outcome(fetcher.fetch(server.urls[i % 2]!)));
    await until(() => server.active === 3);
    // Let anything that would break the bound arrive.
    await new Promise((r) => setTimeout(r, 300));
    expect([server.active, server.requests]).toStrictEqual([3, 3]);
    server.release(true);
    expect(await Promise.all(calls)).toStrictEqual(Array(12).fill(200));
    expect({ max: server.maxActive, perHost: Math.max(...server.maxByHost.values()), requests: server.requests }).toStrictEqual({ max: 3, perHost: 2, requests: 12 });
    // Sockets are bounded too: at most the per-host bound per origin, reused from one fetch to the next.
    expect(Math.max(...server.connections.values())).toBeLessThanOrEqual(2);
  });

  it('past the queue a fetch is refused at once with 429 RATE_LIMITED and Retry-After; the queued one runs later', async () => {
    const { server, fetcher } = await setup(['127.0.0.1'], { maxConcurrent: 1, maxQueue: 1, maxWaitMs: 60_000 });
    const url = server.urls[0]!;
    const first = outcome(fetcher.fetch(url));
    await until(() => server.active === 1);
    const queued = outcome(fetcher.fetch(url));
    expect(await outcome(fetcher.fetch(url))).toStrictEqual({
      code: 'RATE_LIMITED',
      message: 'Too many URL fetches in progress; retry in a moment',
      details: { limit: 'fetches', max: 1, retry_after: 1 },
      headers: { 'Retry-After': '1' },
    });
    expect(server.requests).toBe(1);
    server.release(true);
    expect(await Promise.all([first, queued])).toStrictEqual([200, 200]);
    expect(server.requests).toBe(2);
  });

  it('a fetch that waits longer than maxWaitMs is refused with 429, never sent', async () => {
    const { server, fetcher } = await setup(['127.0.0.1'], { maxPerHost: 1, maxQueue: 10, maxWaitMs: 50 });
    const url = server.urls[0]!;
    const first = outcome(fetcher.fetch(url));
    await until(() => server.active === 1);
    expect(await outcome(fetcher.fetch(url))).toMatchObject({ code: 'RATE_LIMITED', details: { limit: 'fetches_per_host', max: 1 }, headers: { 'Retry-After': '1' } });
    server.release(true);
    expect([await first, server.requests]).toStrictEqual([200, 1]);
  });

  it('bytes in flight: each fetch reserves its maxBytes; a small fetch passes a large one that does not fit', async () => {
    const MiB = 1024 * 1024;
    const { server, fetcher } = await setup(['127.0.0.1'], { maxBytesInFlight: 10 * MiB, maxQueue: 10, maxWaitMs: 60_000 });
    const url = server.urls[0]!;
    const big1 = outcome(fetcher.fetch(url, { maxBytes: 6 * MiB }));
    await until(() => server.active === 1);
    const big2 = outcome(fetcher.fetch(url, { maxBytes: 6 * MiB }));
    const small = outcome(fetcher.fetch(url, { maxBytes: 4 * MiB }));
    await until(() => server.active === 2);
    await new Promise((r) => setTimeout(r, 200));
    expect([server.active, server.requests]).toStrictEqual([2, 2]);
    server.release();
    expect(await big1).toBe(200);
    await until(() => server.requests === 3);
    server.release(true);
    expect(await Promise.all([big2, small])).toStrictEqual([200, 200]);
  });

  it('a caller that gives up while queued leaves the queue and is never sent', async () => {
    const { server, fetcher } = await setup(['127.0.0.1'], { maxConcurrent: 1, maxQueue: 5, maxWaitMs: 60_000 });
    const url = server.urls[0]!;
    const first = outcome(fetcher.fetch(url));
    await until(() => server.active === 1);
    const ac = new AbortController();
    const gaveUp = outcome(fetcher.fetch(url, { signal: ac.signal }));
    ac.abort();
    expect(await gaveUp).toMatchObject({ code: 'UPSTREAM_TIMEOUT', message: 'The request was cancelled' });
    server.release(true);
    expect([await first, server.requests]).toStrictEqual([200, 1]);
  });
});

describe('FetchBudget', () => {
  it('a redirect trades its host slot: the lease waits for room on the new host and frees the old one', async () => {
    const b = new FetchBudget({ maxConcurrent: 4, maxPerHost: 1, maxQueue: 4, maxWaitMs: 60_000 });
    const onA = await b.acquire('a.test', 10);
    const onB = await b.acquire('B.test', 10);
    let moved = false;
    const move = onA.moveTo('b.test').then(() => (moved = true));
    // a.test is free again at once; b.test is not until onB ends.
    const another = await b.acquire('a.test', 10);
    await new Promise((r) => setTimeout(r, 20));
    expect([moved, b.load]).toStrictEqual([false, { running: 3, waiting: 1, bytesInFlight: 30 }]);
    onB.release();
    await move;
    for (const l of [onA, another, onA]) l.release(); // releasing twice is harmless
    expect(b.load).toStrictEqual({ running: 0, waiting: 0, bytesInFlight: 0 });
  });
});
