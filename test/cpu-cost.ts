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

/** The number of runs of `run` that take at least `minBatchMs` of CPU time, so timer noise stays small. */
async function batchSize(run: () => unknown, minBatchMs: number): Promise<number> {
  let times = 1;
  while ((await batch(run, times)) < minBatchMs) times *= 2;
  return times;
}

export interface CostRatio {
  /** CPU ms per call of the hostile run over the harmless one's. */
  ratio: number;
  /** A one-line account for the assertion message. */
  text: string;
}

/**
 * How many times the harmless run's CPU time per call the hostile one takes. Both are warmed up
 * first (JIT and first-use costs are not the cost) and timed in interleaved batches of at least
 * `minBatchMs`, so neither profits from running later; the best of `repeats` batches counts.
 * Each run should check its result (a wrong answer fast is no pass).
 */
export async function costRatio(hostile: () => unknown, harmless: () => unknown, minBatchMs = 50, repeats = 3): Promise<CostRatio> {
  await hostile();
  await harmless();
  const hn = await batchSize(hostile, minBatchMs);
  const bn = await batchSize(harmless, minBatchMs);
  let h = Infinity;
  let b = Infinity;
  for (let i = 0; i < repeats; i++) {
    h = Math.min(h, (await batch(hostile, hn)) / hn);
    b = Math.min(b, (await batch(harmless, bn)) / bn);
  }
  const ratio = h / b;
  const text = `hostile ${h.toFixed(3)} ms CPU, harmless ${b.toFixed(3)} ms CPU a call, ratio ${ratio.toFixed(2)}`;
  if (process.env.GROWTH_LOG) console.error(`[cost] ${text}`);
  return { ratio, text };
}
