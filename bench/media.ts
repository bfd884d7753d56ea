// Media benchmark: QR PNG generations per second through the tool, and a 1000×800 JPEG →
// WebP (and → AVIF) conversion through image_convert (invokeTool, base64 data) beside sharp alone
// on the same image with the same settings, in the same run. Median ms of BENCH_ROUNDS (default
// 7) interleaved rounds after a warm-up.
// Standalone: node --import tsx bench/media.ts (prints JSON).
import { pathToFileURL } from 'node:url';
import sharp from 'sharp';
import { invokeTool } from '../src/invoke.js';
import type { AnyTool } from '../src/registry.js';
import { closeServices } from '../src/services.js';
import { avifEffort, imageConvert } from '../src/tools/media/image-convert.js';
import { qrcodeGenerate } from '../src/tools/media/qrcode-generate.js';
import { testServices, toolContext } from '../test/harness.js';
import { sampleImage } from '../test/fixtures/media/images.js';
import { median } from './lib.js';

const round1 = (n: number): number => Math.round(n * 10) / 10;

/** Calls of `fn` completed per second over about `ms` milliseconds (after one warm-up call). */
async function perSecond(fn: () => Promise<unknown>, ms = 1500): Promise<number> {
  await fn();
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    await fn();
    n++;
  }
  return Math.round((n * 1000) / (performance.now() - t0));
}

async function medians(rounds: number, cases: Record<string, () => Promise<unknown>>): Promise<Record<string, number>> {
  const times: Record<string, number[]> = {};
  for (const [name, fn] of Object.entries(cases)) {
    await fn();
    times[name] = [];
  }
  for (let i = 0; i < rounds; i++) {
    for (const [name, fn] of Object.entries(cases)) {
      const t = performance.now();
      await fn();
      times[name]!.push(performance.now() - t);
    }
  }
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, round1(median(v))]));
}

export async function benchMedia(): Promise<Record<string, number | string>> {
  const services = await testServices();
  const ctx = toolContext(services);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 7);
  try {
    const qr = (format: string) => () => invokeTool(qrcodeGenerate as unknown as AnyTool, { content: 'https://example.com/some/path?q=1', format, size: 256 }, ctx);
    const qrPngPerSecond = await perSecond(qr('png'));
    const qrMs = await medians(15, { png: qr('png'), svg: qr('svg'), bmp: qr('bmp') });

    const jpeg = await sampleImage(1000, 800);
    const data = jpeg.toString('base64');
    const tool = (format: string) => () => invokeTool(imageConvert as unknown as AnyTool, { data, format, quality: 80 }, ctx);
    const conv = await medians(rounds, {
      webpTool: tool('webp'),
      webpSharp: () => sharp(jpeg).rotate().webp({ quality: 80, effort: 4 }).toBuffer(),
      avifTool: tool('avif'),
      avifSharp: () => sharp(jpeg).rotate().avif({ quality: 80, effort: avifEffort(1000 * 800) }).toBuffer(),
    });
    return {
      qrPngPerSecond,
      qrPngMs: qrMs.png!,
      qrSvgMs: qrMs.svg!,
      qrBmpMs: qrMs.bmp!,
      webp1000x800ToolMs: conv.webpTool!,
      webp1000x800SharpMs: conv.webpSharp!,
      avif1000x800ToolMs: conv.avifTool!,
      avif1000x800SharpMs: conv.avifSharp!,
      avifEffort: avifEffort(1000 * 800),
      sharpConcurrency: sharp.concurrency(),
      rounds,
    };
  } finally {
    await closeServices(services);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await benchMedia(), null, 2));
}
