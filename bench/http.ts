// Issue 2 benchmark: bare hono vs REST base-convert vs MCP tools/call base_convert, side by side.
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { load, median, root, startProcess, startService, type LoadResult } from './lib.js';

export async function benchHttp(): Promise<Record<string, unknown>> {
  const barePort = 3101;
  const svcPort = 3102;
  const procs: ChildProcess[] = [];
  try {
    procs.push(await startProcess(['--import', 'tsx', path.join(root, 'bench', 'bare-hono.ts')], { PORT: String(barePort) }, `http://127.0.0.1:${barePort}/`));
    procs.push(await startService(svcPort));
    const cases: Record<string, Parameters<typeof load>[1]> = {
      bare: { url: `http://127.0.0.1:${barePort}/echo`, body: '{"value":"255"}' },
      rest: { url: `http://127.0.0.1:${svcPort}/api/base-convert`, body: '{"value":"255"}' },
      mcp: {
        url: `http://127.0.0.1:${svcPort}/mcp`,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '255' } } }),
        headers: { accept: 'application/json, text/event-stream' },
      },
    };
    // Warm up (JIT), then alternate rounds so machine noise hits every case alike.
    for (const [k, o] of Object.entries(cases)) await load(k, { ...o, duration: 2 });
    const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
    const results: Record<string, LoadResult[]> = { bare: [], rest: [], mcp: [] };
    for (let i = 0; i < rounds; i++) {
      for (const [k, o] of Object.entries(cases)) results[k]!.push(await load(k, o));
    }
    const rps = (k: string) => median(results[k]!.map((r) => r.rps));
    const p99 = (k: string) => median(results[k]!.map((r) => r.p99));
    const errors = Object.values(results).flat().reduce((a, r) => a + r.errors + r.non2xx, 0);
    return {
      'bare hono req/s': rps('bare'),
      'REST base-convert req/s': rps('rest'),
      'MCP tools/call req/s': rps('mcp'),
      'REST ÷ bare': +(rps('rest') / rps('bare')).toFixed(2),
      'MCP ÷ bare': +(rps('mcp') / rps('bare')).toFixed(2),
      'p99 ms (bare/REST/MCP)': `${p99('bare')}/${p99('rest')}/${p99('mcp')}`,
      'errors + non-2xx': errors,
      rounds,
    };
  } finally {
    for (const p of procs) p.kill();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await benchHttp(), null, 2));
}
