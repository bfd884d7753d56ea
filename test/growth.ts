// A guard against super-linear blow-ups that does not flake on a loaded machine: instead of an
// absolute time bound, time the same work at size n and 4n in the same test. Linear work is
// ≈ 4× slower at 4n, quadratic ≈ 16×. The time is this process's CPU time (user + system, GC
// threads included), not the wall clock: other processes on the machine do not add to it, where
// a neighbour's burst of a few seconds used to land on the long 4n runs only (seen: a linear
// parse "growing" 10.7× under a load average of 9 on 2 cores). The best of a few interleaved
// runs drops what noise is left.

export interface GrowthOptions {
  /** First size tried. */
  from: number;
  /** Largest size the work accepts (4n stays at or below it). */
  max: number;
  /** n is doubled until one run at n takes at least this much CPU time, so timer noise stays small. */
  minBaseMs?: number;
  /** Runs per size; the best one counts. */
  repeats?: number;
}

export interface Growth {
  n: number;
  baseMs: number;
  bigMs: number;
  /** bigMs / max(baseMs, minBaseMs): ≈ 4 when linear, ≈ 16 when quadratic. */
  ratio: number;
  /** A one-line account for the assertion message. */
  text: string;
}

/** A test timeout for growth checks: a machine loaded 10× slows them 10×, and the ratio holds. */
export const GROWTH_TIMEOUT_MS = 180_000;

/** The ratio that fails: between linear (≈ 4) and quadratic (≈ 16), with room for noise. */
export const MAX_GROWTH = 9;

async function timed(run: (n: number) => unknown, n: number): Promise<number> {
  const t0 = process.cpuUsage();
  await run(n);
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / 1000;
}

/** Times `run(n)` against `run(4n)`; `run` should also check its result (a wrong answer fast is no pass). */
export async function growth(run: (n: number) => unknown, opts: GrowthOptions): Promise<Growth> {
  const minBaseMs = opts.minBaseMs ?? 50;
  const repeats = opts.repeats ?? 3;
  let n = Math.min(opts.from, Math.floor(opts.max / 4));
  await run(n); // warm-up: JIT and first-use costs are not growth
  let base = await timed(run, n);
  while (base < minBaseMs && n * 8 <= opts.max) {
    n *= 2;
    base = await timed(run, n);
  }
  let big = Infinity;
  for (let i = 0; i < repeats; i++) {
    big = Math.min(big, await timed(run, 4 * n));
    if (i > 0) base = Math.min(base, await timed(run, n));
  }
  const ratio = big / Math.max(base, minBaseMs);
  const text = `n=${n}: ${base.toFixed(1)} ms CPU, 4n: ${big.toFixed(1)} ms CPU, ratio ${ratio.toFixed(2)} (limit ${MAX_GROWTH})`;
  if (process.env.GROWTH_LOG) console.error(`[growth] ${text}`);
  return { n, baseMs: base, bigMs: big, ratio, text };
}
