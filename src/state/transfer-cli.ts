import fs from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { Config } from '../config.js';
import { createLogger, type Logger } from '../log.js';
import { finishAnalyticsMove, openStoreForCli } from './index.js';
import { exportStore, importStore, TransferError, type TransferProgress } from './transfer.js';
import { StoreError, type AnyCollectionDef, type Store } from './types.js';

export const TRANSFER_USAGE = `Usage:
  devtoolbox export [FILE]            write every record as JSON lines (default: stdout)
  devtoolbox import [--merge] [FILE]  read an export (default: stdin) into an empty DATA_DIR;
                                      --merge: into one that has records (insert or replace by id)
The server must be stopped (one process per DATA_DIR). Progress goes to stderr.
`;

export interface TransferIo {
  stdin: Readable;
  stdout: Writable;
  err(text: string): void;
}

const processIo: TransferIo = { stdin: process.stdin, stdout: process.stdout, err: (t) => process.stderr.write(t) };

function progressLine(kind: string, p: TransferProgress): string {
  const of = p.total === undefined ? '' : ` of ${p.total.toLocaleString('en-US')}`;
  return `devtoolbox ${kind}: ${p.records.toLocaleString('en-US')}${of} records (${p.perSecond.toLocaleString('en-US')}/s)${p.done ? ', done' : `, ${p.collection}`}\n`;
}

/**
 * `devtoolbox export|import …`: opens DATA_DIR for the CLI (refused while a server runs on it),
 * runs the transfer, and returns the exit code (0 done, 1 failed, 2 usage). `known`: the
 * service's collection definitions, for data files that do not name their key.
 */
export async function transferCommand(
  kind: 'export' | 'import',
  args: readonly string[],
  config: Config,
  opts: { known?: readonly AnyCollectionDef[]; io?: TransferIo; settle?: (store: Store, log: Logger) => Promise<unknown> } = {},
): Promise<number> {
  const io = opts.io ?? processIo;
  const merge = args.includes('--merge');
  const rest = args.filter((a) => a !== '--merge');
  if (rest.some((a) => a.startsWith('-') && a !== '-') || rest.length > 1 || (merge && kind === 'export')) {
    io.err(TRANSFER_USAGE);
    return 2;
  }
  const file = rest[0] === '-' ? undefined : rest[0];
  let store: Store;
  const log = createLogger(config.logLevel === 'debug' ? 'debug' : 'warn');
  try {
    store = await openStoreForCli(config, { log, purpose: kind });
  } catch (err) {
    if (err instanceof StoreError) {
      const hint = err.code === 'LOCKED' ? '\nStop the server, run the command again, then start the server.' : '';
      io.err(`devtoolbox ${kind}: ${err.message}${hint}\n`);
      return 1;
    }
    throw err;
  }
  const onProgress = (p: TransferProgress) => io.err(progressLine(kind, p));
  // An export to a file is written aside and renamed at the end: a failed one leaves no file that looks whole.
  const partial = kind === 'export' && file ? `${file}.partial` : undefined;
  try {
    // Records a cut-short move into DATA_DIR/analytics left in the main store: moved first, so that an export holds them all.
    await finishAnalyticsMove(store, opts.known ?? [], log);
    // What the families' threads left to finish (FamilyManifest.settleForCli): the records are whole first.
    await opts.settle?.(store, log);
    if (kind === 'export') {
      const out = partial ? fs.createWriteStream(partial, { mode: 0o600 }) : io.stdout;
      await exportStore(store, out, { onProgress, known: opts.known });
      if (partial) {
        out.end();
        await finished(out);
        fs.renameSync(partial, file!);
      }
    } else {
      await importStore(store, file ? fs.createReadStream(file) : io.stdin, { merge, onProgress, known: opts.known });
    }
    return 0;
  } catch (err) {
    if (partial) fs.rmSync(partial, { force: true });
    if (err instanceof TransferError || err instanceof StoreError || (err as NodeJS.ErrnoException).code !== undefined) {
      io.err(`devtoolbox ${kind}: ${(err as Error).message}\n`);
      return 1;
    }
    throw err;
  } finally {
    await store.close();
  }
}
