/**
 * The memory store (tests, and a model of what every backend must do): the file store's engine
 * (./file/engine.ts) with nothing to persist to, so a write is durable once applied.
 */
import { Engine } from './file/engine.js';
import type { Store } from './types.js';

/** A store that keeps everything in memory and forgets it when closed. */
export function createMemoryStore(): Store {
  return new Engine({ kind: 'memory' });
}
