// Issues 21/22: per-call cost beside bare hono — REST, MCP in both protocol eras, tools/list, and the /s/ redirect beside a bare GET 302. Per case: req/s
// (autocannon, 32 connections) and the server's own CPU per request, from /proc/<pid>/stat
// (utime + stime across the run), which does not depend on how much CPU the load generator takes.
// Each case is measured right after its bare baseline and compared within that pair (the machine drifts by minutes); medians over the rounds. BENCH_ONLY=mcp.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cpuMicros, freePort, load, median, root, startProcess, startService, type LoadResult } from './lib.js';


interface Case {
  proc: 'bare' | 'svc';
  /** POST (default) with `body`, or GET (redirects). */
  method?: 'GET' | 'POST';
  /** The status a good answer has (default 200). */
  status?: number;
  url: string;
  body: string;
  headers?: Record<string, string>;
}

interface Run extends LoadResult {
  cpuUs: number;
}

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
};
const ACCEPT = { accept: 'application/json, text/event-stream' };

export async function benchMcp(): Promise<Record<string, unknown>> {
  if (!fs.existsSync('/proc/self/stat')) return { skipped: 'needs /proc for the server CPU figure' };
  const [barePort, svcPort] = [await freePort(), await freePort()];
  const procs: Record<'bare' | 'svc', ChildProcess | undefined> = { bare: undefined, svc: undefined };
  try {
    procs.bare = await startProcess(['--import', 'tsx', path.join(root, 'bench', 'bare-hono.ts')], { PORT: String(barePort) }, `http://127.0.0.1:${barePort}/`);
    procs.svc = await startService(svcPort);
    const mcp = `http://127.0.0.1:${svcPort}/mcp`;
    // Issue 31: a legacy client that declared MCP Apps sends the session id its initialize got.
    const init = await fetch(mcp, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...ACCEPT },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } }, clientInfo: { name: 'bench', version: '1' } } }),
    });
    const appsSession = init.headers.get('mcp-session-id');
    if (!appsSession) throw new Error('initialize declaring MCP Apps got no Mcp-Session-Id');
    const legacyList = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const cases: Record<string, Case> = {
      'bare hono POST echo': { proc: 'bare', url: `http://127.0.0.1:${barePort}/echo`, body: '{"value":"255"}' },
      // Reference: the same tool over REST (same server, same plumbing in front of the call path).
      'REST POST /api/base-convert': { proc: 'svc', url: `http://127.0.0.1:${svcPort}/api/base-convert`, body: '{"value":"255"}' },
      'legacy tools/call base_convert': {
        proc: 'svc',
        url: mcp,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '255' } } }),
        headers: ACCEPT,
      },
      '2026-07-28 tools/call base_convert': {
        proc: 'svc',
        url: mcp,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '255' }, _meta: MODERN_META } }),
        headers: { ...ACCEPT, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'base_convert' },
      },
      '2026-07-28 tools/list': {
        proc: 'svc',
        url: mcp,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: MODERN_META } }),
        headers: { ...ACCEPT, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
      },
      'legacy tools/list': { proc: 'svc', url: mcp, body: legacyList, headers: { ...ACCEPT, 'mcp-protocol-version': '2025-11-25' } },
      'legacy tools/list, MCP Apps session': { proc: 'svc', url: mcp, body: legacyList, headers: { ...ACCEPT, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': appsSession } },
      // Issue 21: the redirect beside a bare hono GET that answers a 302.
      'bare hono GET 302': { proc: 'bare', method: 'GET', status: 302, url: `http://127.0.0.1:${barePort}/r`, body: '' },
      'GET /s/{code} redirect': { proc: 'svc', method: 'GET', status: 302, url: `http://127.0.0.1:${svcPort}/s/bench-1`, body: '' },
    };
    await fetch(`http://127.0.0.1:${svcPort}/api/shorten`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"url":"https://example.com/bench","code":"bench-1"}' });
    // Each case answers what it should before it is measured.
    for (const [name, c] of Object.entries(cases)) {
      const get = c.method === 'GET';
      const r = await fetch(c.url, get ? { redirect: 'manual' } : { method: 'POST', body: c.body, headers: { 'content-type': 'application/json', ...c.headers } });
      const text = await r.text();
      const j = c.url.endsWith('/mcp') ? (JSON.parse(text) as { error?: unknown; result?: { isError?: boolean } }) : {};
      if (r.status !== (c.status ?? 200) || j.error !== undefined || j.result?.isError) throw new Error(`${name}: ${r.status} ${text.slice(0, 200)}`);
    }
    const run = async (name: string, c: Case, duration?: number): Promise<Run> => {
      const pid = procs[c.proc]!.pid!;
      const t0 = cpuMicros(pid);
      const r = await load(name, c.method === 'GET' ? { url: c.url, method: 'GET', duration } : { url: c.url, body: c.body, headers: c.headers, duration });
      const t1 = cpuMicros(pid);
      const total = r.rps * (duration ?? Number(process.env.BENCH_SECONDS ?? 6));
      // autocannon counts a 3xx as non-2xx: for the redirect cases that is the expected answer (checked above).
      if (c.status !== undefined && c.status >= 300 && c.status < 400) r.non2xx = 0;
      return { ...r, cpuUs: total > 0 ? (t1 - t0) / total : NaN };
    };
    for (const [name, c] of Object.entries(cases)) await run(name, c, 2); // warm-up (JIT)
    // Each case of the service is measured right after its bare baseline (the POST echo, or the
    // GET 302 for the redirect), and its ratio is taken within that pair: this machine's speed
    // drifts by ±50 % over minutes, far more than within one pair. Reported: the median of the
    // paired ratios over the rounds, and the median req/s and CPU of each case.
    const baseOf = (name: string) => (cases[name]!.method === 'GET' ? 'bare hono GET 302' : 'bare hono POST echo');
    const svcCases = Object.keys(cases).filter((k) => cases[k]!.proc === 'svc');
    const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
    const results: Record<string, Run[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
    const pairs: Record<string, Array<{ cpu: number; rps: number }>> = Object.fromEntries(svcCases.map((k) => [k, []]));
    const measure = async (name: string, i: number): Promise<Run> => {
      const r = await run(name, cases[name]!);
      results[name]!.push(r);
      process.stderr.write(`  mcp round ${i + 1} ${name}: ${r.rps} req/s, ${r.cpuUs.toFixed(1)} µs CPU/request\n`);
      return r;
    };
    for (let i = 0; i < rounds; i++) {
      for (const name of svcCases) {
        const base = await measure(baseOf(name), i);
        const r = await measure(name, i);
        pairs[name]!.push({ cpu: r.cpuUs / base.cpuUs, rps: r.rps / base.rps });
      }
    }
    const rps = (k: string) => median(results[k]!.map((r) => r.rps));
    const cpu = (k: string) => median(results[k]!.map((r) => r.cpuUs));
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(cases)) {
      out[k] = {
        'req/s': rps(k),
        'server CPU µs/request': +cpu(k).toFixed(1),
        'p99 ms': median(results[k]!.map((r) => r.p99)),
        ...(pairs[k] ? { 'CPU ÷ its baseline (paired)': pairs[k]!.map((p) => +p.cpu.toFixed(2)) } : {}),
      };
    }
    const ratio = (k: string) => `CPU ${median(pairs[k]!.map((p) => p.cpu)).toFixed(2)}× req/s ${median(pairs[k]!.map((p) => p.rps)).toFixed(2)}×`;
    const line =
      `mcp ÷ bare hono (median of ${rounds} paired rounds): legacy tools/call ${ratio('legacy tools/call base_convert')} | 2026-07-28 tools/call ${ratio('2026-07-28 tools/call base_convert')}` +
      ` | tools/list ${ratio('2026-07-28 tools/list')} | REST ${ratio('REST POST /api/base-convert')} (MCP targets: CPU ≤ 1.6×; REST ≤ 1.3×)` +
      ` | /s/ redirect ÷ bare GET 302: ${ratio('GET /s/{code} redirect')} (target CPU ≤ 1.3×)` +
      ` | legacy tools/list ${ratio('legacy tools/list')}, with an MCP Apps session ${ratio('legacy tools/list, MCP Apps session')}`;
    process.stderr.write(`${line}\n`);
    out.ratios = line;
    out['errors + non-2xx'] = Object.values(results)
      .flat()
      .reduce((a, r) => a + r.errors + r.non2xx, 0);
    out.rounds = rounds;
    return out;
  } finally {
    for (const p of Object.values(procs)) p?.kill();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await benchMcp(), null, 2));
}
