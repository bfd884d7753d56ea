import type { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { Workers, type Slot } from './workers.js';

describe('Workers.drained', () => {
  it('waits for a retired worker to exit, but not for a terminate() that never settles', async () => {
    const w = new Workers<never>({
      size: 0,
      url: new URL('file:///unused.js'),
      data: {} as never,
      maxOldGenerationSizeMb: 64,
      onMessage: () => {},
      onMessageError: () => {},
      onExit: () => {},
    });
    let exited = false;
    const exits = { worker: { terminate: () => new Promise((r) => setTimeout(() => r((exited = true)), 50)) } as unknown as Worker, state: 'idle' } as Slot<never>;
    w.retire(exits);
    await w.drained(10_000);
    expect(exited).toBe(true);
    const hangs = { worker: { terminate: () => new Promise(() => {}) } as unknown as Worker, state: 'idle' } as Slot<never>;
    w.retire(hangs);
    let settled = false;
    const done = w.drained(100).then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false);
    await done;
    expect(settled).toBe(true);
  });
});
