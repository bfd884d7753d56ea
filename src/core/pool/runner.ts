import type { Config } from '../../config.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../../metrics.js';
import { failSpan, inSpan, type Telemetry } from '../../telemetry.js';
import type { OffThreadRunner } from '../call.js';
import { createToolPool, type ToolPool } from './pool.js';

/** The worker pool of a config (undefined when WORKERS=0: heavy tools then run inline). */
export function poolFor(config: Config, log: Logger, startAfter?: Promise<unknown>): ToolPool | undefined {
  if (config.workers === 0) return undefined;
  return createToolPool({
    startAfter,
    size: config.workers,
    maxQueue: config.workerQueue,
    deadlineMs: config.workerDeadlineMs,
    maxOldGenerationSizeMb: config.workerHeapMb,
    config,
    log,
  });
}

/**
 * The call path's off-thread runner on a pool: same caller, progress and cancellation. With
 * metrics, each job's outcome is counted and the pool's queue and busy workers are read at scrape.
 */
export function poolRunner(pool: ToolPool, metrics?: Metrics, telemetry?: Telemetry): OffThreadRunner {
  const onPool: OffThreadRunner['run'] = (tool, input, ctx) =>
    pool.run(tool.name, input, {
      signal: ctx.signal,
      caller: ctx.caller,
      onProgress: (p, total, message) => void ctx.progress(p, total, message).catch(() => {}),
    });
  const t = telemetry;
  // A span per pool run (queue wait included), a child of the tool call's.
  const run: OffThreadRunner['run'] = t
    ? (tool, input, ctx) => inSpan(t, `pool ${tool.name}`, { 'tool.name': tool.name }, () => onPool(tool, input, ctx), (span, _r, err) => err !== undefined && failSpan(t, span, err)) as ReturnType<OffThreadRunner['run']>
    : onPool;
  if (!metrics?.enabled) return { run };
  metrics.watchPool(() => pool.stats);
  return {
    run: (tool, input, ctx) =>
      run(tool, input, ctx).then(
        (r) => {
          metrics.poolJob('ok');
          return r;
        },
        (err: unknown) => {
          metrics.poolJob((err as { code?: unknown } | null)?.code === undefined ? 'error' : String((err as { code: unknown }).code));
          throw err;
        },
      ),
  };
}
