// Placeholder until the guarded fetcher lands (issue: QR, image conversion, guarded fetcher).
import type { Config } from '../config.js';

export interface Fetcher {
  readonly config: Pick<Config, 'fetchAllowPrivate' | 'fetchTimeoutMs' | 'fetchMaxBytes'>;
}

export function createFetcher(config: Config): Fetcher {
  return { config };
}
