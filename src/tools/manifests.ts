/**
 * The family list: adding a family is one folder (`manifest.ts` + `index.ts`) plus one line
 * here. Light on purpose: the manifests name each family's collections without importing its
 * tools, so `serve` starts loading the data first (issue 18); src/tools/index.ts loads the
 * families from this same list.
 */
import { storedCollections, type FamilyManifest } from '../core/family.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Store } from '../state/index.js';
import { auth } from './auth/manifest.js';
import { cronTasks } from './cron-tasks/manifest.js';
import { data } from './data/manifest.js';
import { files } from './files/manifest.js';
import { formatting } from './formatting/manifest.js';
import { media } from './media/manifest.js';
import { network } from './network/manifest.js';
import { security } from './security/manifest.js';
import { seo } from './seo/manifest.js';
import { shortener } from './shortener/manifest.js';

/** Every family, in the order tools/list and /docs show their tools. */
export const manifests: readonly FamilyManifest[] = [formatting, media, seo, shortener, cronTasks, files, auth, security, network, data];

/** Runs each family's settleForCli on a store a command-line tool opened (export, import). */
export async function settleForCli(families: readonly FamilyManifest[], store: Store, config: Config, log: Logger): Promise<void> {
  for (const f of families) await f.settleForCli?.(store, config, log);
}

/** Every collection the server keeps (the families' and the tasks'): what `serve` starts loading first. */
export const STORED_COLLECTIONS = storedCollections(manifests);
