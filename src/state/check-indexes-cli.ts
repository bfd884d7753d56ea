import type { Config } from '../config.js';
import { stdio, type CliIo } from '../lib/cli-io.js';
import { createLogger } from '../log.js';
import { openStoreForCli } from './index.js';
import { StoreError, type AnyCollectionDef, type IndexCheck, type Store } from './types.js';

export const CHECK_INDEXES_USAGE = `Usage:
  devtoolbox check-indexes [--repair]
      compare every stored index with its records (Redis); --repair fixes what is out of step.
      Run it once every instance runs the same version after an upgrade that added an index
      (docs/scale-out.md, "Building a new index"). Safe while servers run.
Exit: 0 every index in step (or repaired), 1 something out of step or a failure, 2 usage.
`;

const n = (x: number) => x.toLocaleString('en-US');

/** One line per index: what was walked and what was out of step. */
export function checkLine(c: IndexCheck, repair: boolean): string {
  const name = `${c.collection}.${c.index}`;
  if (!c.built) return `${name}: not built yet (a server of this version builds it when it starts)\n`;
  const off = c.stale + c.wrong + c.missing;
  const found = `${n(c.entries)} entries, ${n(c.records)} records: ${n(c.stale)} stale, ${n(c.wrong)} wrong, ${n(c.missing)} missing`;
  return `${name}: ${found}${off > 0 ? (repair ? ` (repaired ${n(c.repaired)})` : ' (run with --repair)') : ''}\n`;
}

/** `devtoolbox check-indexes [--repair]`. Returns the exit code. */
export async function checkIndexesCommand(args: readonly string[], config: Config, defs: readonly AnyCollectionDef[], io: CliIo = stdio): Promise<number> {
  const repair = args.includes('--repair');
  if (args.some((a) => a !== '--repair')) {
    io.err(CHECK_INDEXES_USAGE);
    return 2;
  }
  if (!config.redis) {
    io.out('The file store builds its indexes in memory from the records at each start: nothing stored to check.\n');
    return 0;
  }
  let store: Store | undefined;
  try {
    store = await openStoreForCli(config, { log: createLogger(config.logLevel === 'debug' ? 'debug' : 'warn'), purpose: 'check-indexes' });
    const results = await store.checkIndexes!(defs, { repair, onProgress: (c) => io.out(checkLine(c, repair)) });
    const left = results.some((c) => !c.built || c.stale + c.wrong + c.missing > c.repaired);
    return left ? 1 : 0;
  } catch (err) {
    // Redis unreachable at the start or on the way: the command's own one line.
    if (err instanceof StoreError) {
      io.err(`devtoolbox check-indexes: ${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    await store?.close();
  }
}
