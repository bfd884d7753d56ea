// file_process benchmark: parse and analyze a generated 5 MiB CSV (50k rows × 10 columns)
// through the tool (invokeTool) and through REST (app.request), beside papaparse alone on the
// same text in the same run. Median milliseconds of BENCH_ROUNDS (default 9) interleaved rounds after a warm-up.
// Standalone: node --import tsx bench/file-process.ts (prints JSON).
import Papa from 'papaparse';
import { pathToFileURL } from 'node:url';
import { invokeTool } from '../src/invoke.js';
import type { AnyTool } from '../src/registry.js';
import { fileProcess } from '../src/tools/files/file-process.js';
import { closeServices } from '../src/services.js';
import { testServices, toolContext, startTestApp } from '../test/harness.js';

/** A deterministic CSV of `rows` rows × 10 columns (~110 bytes a row), with some quoted fields. */
export function benchCsv(rows = 50_000): string {
  const cities = ['Berlin', 'Paris', '"New York, NY"', 'São Paulo', 'Tokyo', 'Lagos', '"The ""Quote"" Town"'];
  const out = ['id,name,email,age,score,active,joined,city,zip,note'];
  let seed = 42;
  const rnd = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (let i = 0; i < rows; i++) {
    const month = String(1 + (i % 12)).padStart(2, '0');
    const day = String(1 + (i % 28)).padStart(2, '0');
    out.push(
      `${i + 1},User ${i},user${i}@example.com,${18 + Math.floor(rnd() * 60)},${(rnd() * 100).toFixed(2)},${rnd() < 0.5},` +
        `2024-${month}-${day},${cities[i % cities.length]},${String(Math.floor(rnd() * 99999)).padStart(5, '0')},lorem ipsum dolor sit amet ${i % 100}`,
    );
  }
  return out.join('\r\n') + '\r\n';
}

/**
 * Runs every case once per round (rounds interleaved, so machine load hits all cases alike) after
 * a warm-up. Returns each case's median milliseconds and, per case, the median over rounds of its
 * time divided by the first case's time in the same round (a paired ratio, steadier than a ratio
 * of medians on a shared machine).
 */
async function measure(rounds: number, cases: Record<string, () => Promise<unknown> | unknown>): Promise<{ ms: Record<string, number>; ratio: Record<string, number> }> {
  const names = Object.keys(cases);
  const times: Record<string, number[]> = {};
  for (const name of names) {
    await cases[name]!(); // warm-up
    times[name] = [];
  }
  for (let i = 0; i < rounds; i++) {
    for (const name of names) {
      const t = performance.now();
      await cases[name]!();
      times[name]!.push(performance.now() - t);
    }
  }
  const med = (list: number[]): number => [...list].sort((a, b) => a - b)[list.length >> 1]!;
  const base = times[names[0]!]!;
  const ms: Record<string, number> = {};
  const ratio: Record<string, number> = {};
  for (const name of names) {
    ms[name] = Math.round(med(times[name]!) * 10) / 10;
    ratio[name] = Math.round(med(times[name]!.map((t, i) => t / base[i]!)) * 100) / 100;
  }
  return { ms, ratio };
}

export async function benchFileProcess(): Promise<Record<string, number>> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 9);
  const csv = benchCsv();
  const services = await testServices();
  const ctx = toolContext(services);
  const tool = fileProcess as unknown as AnyTool;
  const app = await startTestApp();
  try {
    const check = (await invokeTool(tool, { action: 'parse', content: csv }, ctx)).json as { rowCount: number };
    if (check.rowCount !== 50_000) throw new Error(`expected 50000 rows, got ${check.rowCount}`);
    // Bodies serialised once, outside the timing, as a client would send them.
    const bodies: Record<string, string> = {
      parse: JSON.stringify({ action: 'parse', content: csv }),
      analyze: JSON.stringify({ action: 'analyze', content: csv }),
    };
    const rest = async (action: string): Promise<void> => {
      const body = bodies[action]!;
      const res = await app.request('POST', '/api/file-process', body, {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      });
      if (res.status !== 200) throw new Error(`REST ${action} answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
      await res.text();
    };
    const { ms, ratio } = await measure(rounds, {
      papaparse: () => Papa.parse(csv),
      toolParse: () => invokeTool(tool, { action: 'parse', content: csv }, ctx),
      toolAnalyze: () => invokeTool(tool, { action: 'analyze', content: csv }, ctx),
      restParse: () => rest('parse'),
      restAnalyze: () => rest('analyze'),
      // For comparison: papaparse doing the typing and objects itself, and what serialising
      // its rows as JSON (which any REST answer must do) adds.
      papaparseHeaderTyped: () => Papa.parse(csv, { header: true, dynamicTyping: true, skipEmptyLines: true }),
      papaparseThenJson: () => JSON.stringify(Papa.parse(csv).data),
    });
    return {
      csvBytes: Buffer.byteLength(csv),
      rows: 50_000,
      ...Object.fromEntries(Object.entries(ms).map(([k, v]) => [`${k}Ms`, v])),
      toolParseRatio: ratio.toolParse!,
      toolAnalyzeRatio: ratio.toolAnalyze!,
      restParseRatio: ratio.restParse!,
      restAnalyzeRatio: ratio.restAnalyze!,
      papaparseThenJsonRatio: ratio.papaparseThenJson!,
    };
  } finally {
    await app.close();
    await closeServices(services);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await benchFileProcess(), null, 2));
}
