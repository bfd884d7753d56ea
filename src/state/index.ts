// Placeholder until the state layer lands (issue: state layer + shortener).
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Clock } from '../services.js';

export interface Store {
  close(): Promise<void>;
}

export async function openStore(_config: Config, _deps: { log: Logger; clock: Clock }): Promise<Store> {
  return { close: async () => {} };
}
