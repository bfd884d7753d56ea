// The other shape of test/growth.ts, for work that has no size to double: a hostile input
// (an alias bomb, a schedule that fires once in four years) against a harmless one that does
// the same kind of work. Both are timed in this process's CPU time, so a loaded machine slows
// them alike; an expansion or a walk of every minute costs thousands of times the harmless one.

/** CPU time (user + system) of one batch of `times` runs, in ms. */
async function batch(run: () => unknown, times: number): Promise<number> {
  const t0 = process.cpuUsage();
  for (let i = 0; i < times; i++) await run();
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / 1000;
}

/**
 * CPU ms per call of `run`: the batch is doubled until it takes at least `minBatchMs` (so timer
 * noise stays small), then the best of `repeats` batches counts. `run` should check its result.
 */
export async function cpuPerCall(run: () => unknown, minBatchMs = 50, repeats = 3): Promise<number> {
  await run(); // warm-up: JIT and first-use costs are not the cost
  let times = 1;
  let best = await batch(run, times);
  while (best < minBatchMs) {
    times *= 2;
    best = await batch(run, times);
  }
  for (let i = 1; i < repeats; i++) best = Math.min(best, await batch(run, times));
  return best / times;
}

export interface CostRatio {
  /** CPU ms per call of the hostile run over the harmless one's. */
  ratio: number;
  /** A one-line account for the assertion message. */
  text: string;
}

/** How many times the harmless run's CPU time the hostile one takes. */
export async function costRatio(hostile: () => unknown, harmless: () => unknown): Promise<CostRatio> {
  const h = await cpuPerCall(hostile);
  const b = await cpuPerCall(harmless);
  const ratio = h / b;
  const text = `hostile ${h.toFixed(3)} ms CPU, harmless ${b.toFixed(3)} ms CPU, ratio ${ratio.toFixed(2)}`;
  if (process.env.GROWTH_LOG) console.error(`[cost] ${text}`);
  return { ratio, text };
}
