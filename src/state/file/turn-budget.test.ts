import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/harness.js';
import { createLogger } from '../../log.js';
import { defineCollection, openFileStore, createMemoryStore, type Store } from '../index.js';
import { Slicer } from './bulk.js';
import { TurnBudget } from './turn-budget.js';

const log = createLogger('silent');
const DAYS = defineCollection<{ id: string; code: string }>({ name: 'days', key: 'id', indexes: ['code'], segmentSize: 500, counters: true });
const COUNTS = defineCollection<{ code: string; n: number }>({ name: 'counts', key: 'code', segmentSize: 500 });

const open: Store[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

/**
 * Awaits `n` writes in a row, as a batch of counters does, and says after how many of them an
 * immediate queued before the loop had run (n: never, the loop was held throughout).
 */
async function loopGivenBackAfter(n: number, write: (i: number) => Promise<unknown>): Promise<number> {
  let ran = false;
  setImmediate(() => (ran = true));
  for (let i = 0; i < n; i++) {
    await write(i);
    if (ran) return i;
  }
  return n;
}

describe('TurnBudget', () => {
  it('lets a turn spend its budget, then sends the next write to a later turn', async () => {
    let clock = 100;
    const budget = new TurnBudget(4, () => clock);
    expect(budget.spend()).toBe(undefined);
    clock += 2;
    expect(budget.spend()).toBe(undefined);
    clock += 3;
    const wait = budget.spend();
    expect(wait).toBeInstanceOf(Promise);
    await wait;
    // A new turn: a new account.
    expect(budget.spend()).toBe(undefined);
    clock += 4;
    expect(budget.spend()).toBe(undefined);
    expect(budget.yields).toBe(1);
  });

  it('is shared: a slice of a flush yields once lazy writes spent the turn, and lazy writes once a flush did', async () => {
    let clock = 0;
    const budget = new TurnBudget(4, () => clock);
    const flush = new Slicer(8, undefined, budget);
    // A lazy write opens the turn's account; 5 ms later the flush's slice finds it spent.
    expect(budget.spend()).toBe(undefined);
    clock += 5;
    const wait = flush.maybePause();
    expect(wait).toBeInstanceOf(Promise);
    await wait;
    expect(flush.pauses).toBe(1);
    // A later turn: the flush opens its account and works on; a lazy write then waits.
    clock += 2;
    expect(flush.maybePause()).toBe(undefined);
    clock += 5;
    expect(budget.spend()).toBeInstanceOf(Promise);
  });

  it('gives a job sharing the budget its own first ms after each pause, however much the others spent', async () => {
    let clock = 0;
    const budget = new TurnBudget(4, () => clock);
    const flush = new Slicer(8, undefined, budget);
    budget.spend();
    clock += 50;
    // Queued before the flush's pause: another job runs first in the next turn and spends its budget.
    setImmediate(() => {
      budget.spend();
      clock += 5;
    });
    await flush.maybePause();
    expect(flush.pauses).toBe(1);
    clock += 0.5;
    expect(flush.maybePause()).toBe(undefined);
    clock += 1;
    expect(flush.maybePause()).toBeInstanceOf(Promise);
  });

  it.each([
    ['file', async () => openFileStore(tempDir(), { log })],
    ['memory', async () => createMemoryStore()],
  ])('a loop of awaited lazy adds and increments on the %s store gives the event loop back', async (_kind, openStore) => {
    const store = await openStore();
    open.push(store);
    const days = store.collection(DAYS);
    const counts = store.collection(COUNTS);
    // Loaded and in use before the loops (a first write may wait for the load: a later turn).
    await days.add('warm|d', { visits: 1 }, { init: { id: 'warm|d', code: 'warm' }, durability: 'lazy' });
    await counts.increment('warm', 'n', 1, { init: { code: 'warm', n: 0 }, durability: 'lazy' });
    // Each write is a few µs: thousands of them held the loop for tens of ms in one turn.
    const adds = await loopGivenBackAfter(30_000, (i) => days.add(`k${i}|d`, { visits: 1 }, { init: { id: `k${i}|d`, code: `k${i}` }, durability: 'lazy' }));
    expect(adds).toBeGreaterThan(0);
    expect(adds).toBeLessThan(30_000);
    const incs = await loopGivenBackAfter(30_000, (i) => counts.increment(`c${i}`, 'n', 1, { init: { code: `c${i}`, n: 0 }, durability: 'lazy' }));
    expect(incs).toBeGreaterThan(0);
    expect(incs).toBeLessThan(30_000);
  });
});
