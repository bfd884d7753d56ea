import { RATE_DAYS } from '../auth/auth.js';
import { API_KEYS } from '../auth/keys.js';
import { TASK_COLLECTIONS } from '../core/tasks/record.js';
import type { AnyCollectionDef } from '../state/index.js';
import { LOGS, TASKS } from './cron-tasks/stored.js';
import { LINK_CLICKS, LINKS } from './shortener/links.js';

/**
 * Every collection the server keeps, importable without the tools' libraries: `serve` starts
 * loading them before it imports the rest (issue 18). The families declare the same
 * collections (what buildCore waits for); a test checks that this list covers them.
 */
export const STORED_COLLECTIONS: readonly AnyCollectionDef[] = [LINKS, LINK_CLICKS, API_KEYS, RATE_DAYS, TASKS, LOGS, ...TASK_COLLECTIONS].map(
  (d) => d as unknown as AnyCollectionDef,
);
