import { moduleWorker } from '../../lib/worker-url.js';

/** How to start a pool worker and where its default tool list lives. */
export interface WorkerEntry {
  /** What `new Worker()` is given. */
  url: URL;
  /** Worker execArgv; undefined = inherit the process's. */
  execArgv?: string[];
  /** The module exporting `allTools`, as the worker should import it. */
  toolsModule: URL;
}

/** Picks the worker entry beside `here` (this package's own module URL): see moduleWorker. */
export function workerEntry(here: string): WorkerEntry {
  const ts = here.endsWith('.ts');
  return { ...moduleWorker(here, 'worker'), toolsModule: new URL(`../../tools/index.${ts ? 'ts' : 'js'}`, here) };
}
