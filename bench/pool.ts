// Worker pool benchmark (issue 16): the CPU-heavy tools inline (invokeTool on the main thread)
// beside the same calls through the pool (src/core/pool, 2 workers), and how long the main event
// loop stalls meanwhile. Per case and mode: ms per job one at a time (the pool's per-job cost is
// the difference), jobs/s with 4 in flight, and the longest event-loop stall seen.
// Workers load the TypeScript sources through tsx here; once loaded, the per-job path is the same
// JS as from dist/. BENCH_ROUNDS (default 3) interleaved rounds, medians.
// Standalone: node --import tsx bench/pool.ts (prints JSON).
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../src/config.js';
import { createToolPool, type ToolPool } from '../src/core/pool/pool.js';
import { invokeTool } from '../src/invoke.js';
import type { Logger } from '../src/log.js';
import type { AnyTool, ToolContext } from '../src/registry.js';
import type { Services } from '../src/services.js';
import { allTools } from '../src/tools/index.js';
import { benchCsv } from './file-process.js';

interface Case {
  tool: string;
  input: Record<string, unknown>;
  /** Jobs per measurement. */
  jobs: number;
}

/** ~1 MB of JSON: an array of small records. */
function jsonMb(): string {
  const rows: string[] = [];
  let size = 2;
  for (let i = 0; ; i++) {
    const row = JSON.stringify({ id: i, name: `name ${i}`, tags: ['a', 'b'], ok: i % 2 === 0 });
    if (size + row.length + 1 > 1_000_000) break;
    rows.push(row);
    size += row.length + 1;
  }
  return `[${rows.join(',')}]`;
}

const QUERY = `select a.id, a.name, count(*) as n from accounts a left join orders o on o.account_id = a.id
where a.created_at > '2024-01-01' and (o.status in ('paid', 'sent') or o.total > 100) group by a.id, a.name having count(*) > 2 order by n desc limit 50;`;

const CASES: Record<string, Case> = {
  'json_yaml tiny': { tool: 'json_yaml_convert', input: { input: '{"a":1}' }, jobs: 400 },
  'json_yaml 1 MB json2yaml': { tool: 'json_yaml_convert', input: { input: jsonMb(), direction: 'json2yaml' }, jobs: 2 },
  'sql_format 10 KB': { tool: 'sql_format', input: { input: `${QUERY}\n`.repeat(40) }, jobs: 4 },
  'file_process analyze 1 MiB CSV': { tool: 'file_process', input: { action: 'analyze', content: benchCsv(9_500) }, jobs: 4 },
  'file_process transform 1 MiB CSV': {
    tool: 'file_process',
    input: {
      action: 'transform',
      content: benchCsv(9_500),
      steps: [
        { op: 'filter', column: 'active', operator: 'eq', value: true },
        { op: 'sort', keys: [{ column: 'city' }, { column: 'score', direction: 'desc' }] },
        { op: 'group', keys: ['city'], aggregates: [{ op: 'count' }, { op: 'mean', column: 'score' }, { op: 'max', column: 'age' }] },
      ],
      to: 'json',
    },
    jobs: 4,
  },
  // The data family's heavy tools (issue 35): a query over 1 MB, a diff of two 100 KB texts, a regex over 100 KB.
  'json_query 1 MB filter': { tool: 'json_query', input: { input: jsonMb(), query: '$[?@.ok == true && @.id > 5000].name' }, jobs: 4 },
  'text_diff 2 × 100 KB': { tool: 'text_diff', input: { a: diffText(0), b: diffText(1) }, jobs: 4 },
  'regex_test 100 KB': { tool: 'regex_test', input: { pattern: '(\\w+)@(\\w+)\\.com', flags: 'g', input: 'user@example.com, '.repeat(5_500) }, jobs: 4 },
};

/** ~100 KB of lines; every 50th line differs between variant 0 and 1. */
function diffText(variant: number): string {
  return Array.from({ length: 2_500 }, (_, i) => (i % 50 === 0 && variant === 1 ? `changed line ${i} of the text` : `line ${i} of the text, unchanged`)).join('\n');
}

const quiet: Logger = { debug() {}, info() {}, warn() {}, error: (m, e) => console.error(m, e) };

/** The longest the main thread went without running a 1 ms interval while `work` ran (ms). */
async function stallWhile(work: () => Promise<void>): Promise<number> {
  let last = performance.now();
  let max = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    max = Math.max(max, now - last);
    last = now;
  }, 1);
  await work();
  clearInterval(tick);
  // Inline work may never yield: the whole run is then one stall.
  return Math.round(Math.max(max, performance.now() - last));
}

async function timed(work: () => Promise<void>): Promise<number> {
  const t = performance.now();
  await work();
  return performance.now() - t;
}

async function concurrently(n: number, inFlight: number, one: () => Promise<unknown>): Promise<void> {
  let started = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (started++ < n) await one();
  }));
}

export async function benchPool(): Promise<Record<string, unknown>> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const config = loadConfig({ LOG_LEVEL: 'error' });
  const ctx: ToolContext = {
    caller: { keyId: null, ip: 'bench', transport: 'memory' },
    services: { config, log: quiet } as unknown as Services,
    progress: async () => {},
    signal: new AbortController().signal,
  };
  const pool: ToolPool = createToolPool({ size: 2, maxQueue: 64, deadlineMs: 60_000, maxOldGenerationSizeMb: 512, config, log: quiet });
  const byName = new Map(allTools.map((t) => [t.name, t as AnyTool]));
  const modes = {
    inline: (c: Case) => invokeTool(byName.get(c.tool)!, c.input, ctx),
    pool: (c: Case) => pool.run(c.tool, c.input),
  };
  type Row = { msPerJob: number[]; perSec: number[]; maxStallMs: number[] };
  const rows: Record<string, Record<string, Row>> = {};
  try {
    for (const c of Object.values(CASES)) for (const run of Object.values(modes)) await run(c); // warm-up (and workers up)
    for (let r = 0; r < rounds; r++) {
      for (const [name, c] of Object.entries(CASES)) {
        for (const [mode, run] of Object.entries(modes)) {
          const row = ((rows[name] ??= {})[mode] ??= { msPerJob: [], perSec: [], maxStallMs: [] });
          row.msPerJob.push((await timed(async () => { for (let i = 0; i < c.jobs; i++) await run(c); })) / c.jobs);
          let ms = 0;
          row.maxStallMs.push(await stallWhile(async () => { ms = await timed(() => concurrently(c.jobs, 4, () => run(c))); }));
          row.perSec.push((c.jobs / ms) * 1000);
        }
      }
    }
  } finally {
    await pool.close();
  }
  const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  const round = (x: number): number => (x >= 100 ? Math.round(x) : Math.round(x * 1000) / 1000);
  const out: Record<string, unknown> = { rounds, poolSize: 2 };
  for (const [name, byMode] of Object.entries(rows)) {
    out[name] = Object.fromEntries(
      Object.entries(byMode).map(([mode, row]) => [mode, { msPerJob: round(med(row.msPerJob)), perSec: round(med(row.perSec)), maxStallMs: med(row.maxStallMs) }]),
    );
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await benchPool(), null, 2));
}
