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
import { testServices, toolContext } from '../test/context.js';
import { startTestApp } from '../test/harness.js';

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

/** Median milliseconds of each case, rounds interleaved so machine noise hits every case alike. */
async function medians(rounds: number, cases: Record<string, () => Promise<unknown> | unknown>): Promise<Record<string, number>> {
  const times: Record<string, number[]> = {};
  for (const [name, fn] of Object.entries(cases)) {
    await fn(); // warm-up
    times[name] = [];
  }
  for (let i = 0; i < rounds; i++) {
    for (const [name, fn] of Object.entries(cases)) {
      const t = performance.now();
      await fn();
      times[name]!.push(performance.now() - t);
    }
  }
  const out: Record<string, number> = {};
  for (const [name, list] of Object.entries(times)) {
    list.sort((a, b) => a - b);
    out[name] = Math.round(list[list.length >> 1]! * 10) / 10;
  }
  return out;
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
    const m = await medians(rounds, {
      papaparse: () => Papa.parse(csv),
      // What a REST answer intrinsically adds: the rows serialised as JSON.
      papaparseThenJson: () => JSON.stringify(Papa.parse(csv).data),
      papaparseHeaderTyped: () => Papa.parse(csv, { header: true, dynamicTyping: true, skipEmptyLines: true }),
      toolParse: () => invokeTool(tool, { action: 'parse', content: csv }, ctx),
      toolAnalyze: () => invokeTool(tool, { action: 'analyze', content: csv }, ctx),
      restParse: () => rest('parse'),
      restAnalyze: () => rest('analyze'),
    });
    const papaparse = m.papaparse!;
    const [papaparseHeaderTyped, toolParse, toolAnalyze, restParse, restAnalyze] = [m.papaparseHeaderTyped!, m.toolParse!, m.toolAnalyze!, m.restParse!, m.restAnalyze!];
    const ratio = (a: number): number => Math.round((a / papaparse) * 100) / 100;
    return {
      csvBytes: Buffer.byteLength(csv),
      rows: 50_000,
      papaparseMs: papaparse,
      papaparseHeaderTypedMs: papaparseHeaderTyped,
      papaparseThenJsonMs: m.papaparseThenJson!,
      toolParseMs: toolParse,
      toolAnalyzeMs: toolAnalyze,
      restParseMs: restParse,
      restAnalyzeMs: restAnalyze,
      toolParseRatio: ratio(toolParse),
      toolAnalyzeRatio: ratio(toolAnalyze),
      restParseRatio: ratio(restParse),
      restAnalyzeRatio: ratio(restAnalyze),
    };
  } finally {
    await app.close();
    await closeServices(services);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await benchFileProcess(), null, 2));
}
