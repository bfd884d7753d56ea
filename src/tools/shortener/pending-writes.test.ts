import { describe, expect, it } from 'vitest';
import { createLogger } from '../../log.js';
import { readBetweenWrites, type Analytics } from './analytics.js';
import { CHUNK, PendingWrites, type WriteState } from './pending-writes.js';

interface Count {
  n: number;
}

/** A store of counts whose writes the test can watch and refuse. */
function counted(opts: { refuse?: (key: string) => boolean; refuseChunk?: () => boolean } = {}) {
  const stored = new Map<string, number>();
  let inFlight = 0;
  let most = 0;
  const w = new PendingWrites<Count>({
    periodMs: 60_000,
    write: async (entries) => {
      if (opts.refuseChunk?.()) throw new Error('store away');
      return Promise.allSettled(
        entries.map(async ([key, v]) => {
          most = Math.max(most, ++inFlight);
          await new Promise((r) => setTimeout(r, 1));
          inFlight--;
          if (opts.refuse?.(key)) throw new Error(`refused ${key}`);
          stored.set(key, (stored.get(key) ?? 0) + v.n);
        }),
      );
    },
    merge: (into, more) => (into.n += more.n),
    describe: (n) => `${n} counts`,
    log: createLogger('silent'),
  });
  const count = (key: string, by = 1) => (w.entry(key, () => ({ n: 0 })).n += by);
  return { w, stored, count, most: () => most };
}

describe('PendingWrites (issue 32)', () => {
  it('manual (the visit log\'s batches): no timer of its own; a chunk carries its batch\'s tag, sent again with it; unsent until a batch wrote everything; close writes nothing', async () => {
    const tags: [string, number | undefined][] = [];
    let refuseAfter = Infinity;
    let calls = 0;
    const w = new PendingWrites<Count>({
      periodMs: 1,
      manual: true,
      write: async (entries, _token, tag) => {
        if (++calls > refuseAfter) throw new Error('store away');
        for (const [k] of entries) tags.push([k, tag]);
        return entries.map(() => ({ status: 'fulfilled', value: undefined }));
      },
      merge: (into, more) => (into.n += more.n),
      describe: (n) => `${n} counts`,
      log: createLogger('silent'),
    });
    const count = (key: string) => w.entry(key, () => ({ n: 0 })).n++;
    for (let i = 0; i < CHUNK * 3; i++) count(`k${i}`);
    // No write came of the period (1 ms) by itself.
    await new Promise((r) => setTimeout(r, 20));
    expect(calls).toBe(0);
    // The first chunk written with tag 7, the second refused: sent again, and the rest of the batch put back.
    refuseAfter = 1;
    await w.flush(7);
    expect(tags.map(([, t]) => t)).toStrictEqual(Array.from({ length: CHUNK }, () => 7));
    expect(w.unsent()).toBe(true);
    count('late');
    refuseAfter = Infinity;
    await w.flush(9);
    // The refused chunk as it was, under its own tag; what was put back or counted since under the new one.
    const byKey = new Map(tags);
    expect(byKey.get(`k${CHUNK}`)).toBe(7);
    expect(byKey.get(`k${CHUNK * 2}`)).toBe(9);
    expect(byKey.get('late')).toBe(9);
    expect(byKey.size).toBe(CHUNK * 3 + 1);
    expect(tags).toHaveLength(CHUNK * 3 + 1);
    expect(w.unsent()).toBe(false);
    count('after');
    await w.close();
    expect(tags.some(([k]) => k === 'after')).toBe(false);
  });

  it('writes a batch in chunks sent together (one pipeline on Redis), every count once', async () => {
    const { w, stored, count, most } = counted();
    const keys = Array.from({ length: CHUNK * 10 + 7 }, (_, i) => `k${i}`);
    for (const k of keys) count(k, 2);
    await w.flush();
    expect(most()).toBe(CHUNK);
    expect(stored.size).toBe(keys.length);
    for (const k of keys) expect(stored.get(k)).toBe(2);
    await w.close();
  });

  it('idle only with nothing left: nothing pending, no batch under way, no refused chunk to send again', async () => {
    let refuse = true;
    const { w, stored, count } = counted({ refuseChunk: () => refuse });
    expect(w.idle()).toBe(true);
    count('a');
    expect(w.idle()).toBe(false);
    const writing = w.flush();
    expect(w.idle()).toBe(false); // under way
    await writing;
    expect(w.idle()).toBe(false); // refused: kept to send again
    refuse = false;
    await w.flush();
    expect([w.idle(), stored.get('a')]).toStrictEqual([true, 1]);
    await w.close();
  });

  it('a flush called while a batch is being written resolves once what was counted before it is written', async () => {
    const { w, stored, count } = counted();
    count('a');
    const first = w.flush();
    count('b', 3);
    await w.flush();
    expect(stored.get('a')).toBe(1);
    expect(stored.get('b')).toBe(3);
    await first;
    await w.close();
  });

  it('a refused write keeps its count and the unsent rest, merged with what was counted meanwhile; nothing twice', async () => {
    let refusing = true;
    const { w, stored, count } = counted({ refuse: (k) => refusing && k === 'k3' });
    const keys = Array.from({ length: CHUNK + 5 }, (_, i) => `k${i}`);
    for (const k of keys) count(k);
    const flushing = w.flush();
    count('k3', 10);
    count(`k${CHUNK + 2}`, 10);
    await flushing;
    // The first chunk was written but k3; the second chunk was not sent.
    expect(stored.get('k0')).toBe(1);
    expect(stored.has('k3')).toBe(false);
    expect(stored.has(`k${CHUNK + 2}`)).toBe(false);
    refusing = false;
    await w.flush();
    expect(stored.get('k3')).toBe(11);
    expect(stored.get(`k${CHUNK + 2}`)).toBe(11);
    expect([...stored.values()].reduce((a, b) => a + b, 0)).toBe(keys.length + 20);
    await w.close();
  });

  it('a chunk refused as a whole (the store call rejects) keeps every count of the batch, written once later', async () => {
    let away = true;
    const { w, stored, count } = counted({ refuseChunk: () => away });
    const keys = Array.from({ length: CHUNK + 3 }, (_, i) => `k${i}`);
    for (const k of keys) count(k, 2);
    await w.flush();
    expect(stored.size).toBe(0);
    count('k1');
    away = false;
    await w.flush();
    expect(stored.size).toBe(keys.length);
    expect(stored.get('k1')).toBe(3);
    expect([...stored.values()].reduce((a, b) => a + b, 0)).toBe(keys.length * 2 + 1);
    await w.close();
  });

  it('reports its unwritten entries and the age of the oldest count: kept across a refused batch, 0 once written', async () => {
    let refusing = true;
    const { w, count } = counted({ refuse: () => refusing });
    expect(w.unwritten()).toStrictEqual({ entries: 0, oldestSeconds: 0 });
    count('a');
    // Timers may fire a fraction of a millisecond early against performance.now(): wait longer than asserted.
    await new Promise((r) => setTimeout(r, 35));
    count('b');
    const first = w.unwritten();
    expect(first.entries).toBe(2);
    expect(first.oldestSeconds).toBeGreaterThanOrEqual(0.03);
    await w.flush();
    const refused = w.unwritten();
    expect(refused.entries).toBe(2);
    expect(refused.oldestSeconds).toBeGreaterThan(first.oldestSeconds);
    refusing = false;
    await w.flush();
    expect(w.unwritten()).toStrictEqual({ entries: 0, oldestSeconds: 0 });
    await w.close();
  });

  it('a chunk whose write failed yet was applied (a timed-out command that ran later) is sent again under its token and counted once', async () => {
    const stored = new Map<string, number>();
    const tokens = new Set<string>();
    const seen: string[] = [];
    let ambiguous = true;
    const w = new PendingWrites<Count>({
      periodMs: 60_000,
      // A store that keeps tokens as Collection.addMany's `once` does: the first call is applied, then reported failed.
      write: async (entries, token) => {
        seen.push(token);
        if (!tokens.has(token)) {
          tokens.add(token);
          for (const [k, v] of entries) stored.set(k, (stored.get(k) ?? 0) + v.n);
        }
        if (ambiguous) {
          ambiguous = false;
          throw new Error('Command timed out');
        }
        return entries.map(() => ({ status: 'fulfilled', value: undefined }));
      },
      merge: (into, more) => (into.n += more.n),
      describe: (n) => `${n} counts`,
      log: createLogger('silent'),
    });
    const count = (key: string, by = 1) => (w.entry(key, () => ({ n: 0 })).n += by);
    for (let i = 0; i < CHUNK + 3; i++) count(`k${i}`, 2);
    await w.flush();
    expect(w.unwritten().entries).toBe(CHUNK + 3);
    count('k0', 5);
    await w.flush();
    expect(w.unwritten()).toStrictEqual({ entries: 0, oldestSeconds: 0 });
    // The refused chunk went again first, under its own token; the rest and the new count under new ones.
    expect(seen[1]).toBe(seen[0]);
    expect(new Set(seen).size).toBe(seen.length - 1);
    expect(stored.get('k0')).toBe(7);
    expect([...stored.values()].reduce((a, b) => a + b, 0)).toBe((CHUNK + 3) * 2 + 5);
    await w.close();
  });

  it('dropWhere during a batch: the entry leaves the rest of the batch and what is sent again; the chunk being written is waited for', async () => {
    const written: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let calls = 0;
    const w = new PendingWrites<Count>({
      periodMs: 60_000,
      write: async (entries) => {
        // The first chunk is held, then refused: what it keeps to send again must not hold a dropped entry.
        if (++calls === 1) {
          await gate;
          throw new Error('store away');
        }
        written.push(...entries.map(([k]) => k));
        return entries.map(() => ({ status: 'fulfilled' as const, value: undefined }));
      },
      merge: (into, more) => (into.n += more.n),
      describe: (n) => `${n} counts`,
      log: createLogger('silent'),
    });
    for (let i = 0; i < 3 * CHUNK; i++) w.entry(`c${i}`, () => ({ n: 0 })).n++;
    const flushing = w.flush();
    await new Promise((r) => setImmediate(r));
    // c0 is in the chunk being written; c40 and c70 in the batch, not sent yet.
    let settled = false;
    const dropped = w.dropWhere((k) => k === 'c0' || k === `c${CHUNK + 8}` || k === `c${2 * CHUNK + 6}`).then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false); // the write holding c0 has not settled
    release();
    await dropped;
    await flushing;
    expect(w.unwritten().entries).toBe(3 * CHUNK - 3);
    await w.flush(); // the refused chunk again, then the rest
    expect(written).not.toContain('c0');
    expect(written).not.toContain(`c${CHUNK + 8}`);
    expect(written).not.toContain(`c${2 * CHUNK + 6}`);
    expect(written.length).toBe(3 * CHUNK - 3);
    expect(w.unwritten().entries).toBe(0);
    await w.close();
  });
});

describe('reads between the writes (issue 32: a read across a chunk landing counted it twice or not at all)', () => {
  it('writes() says when a chunk is under way and counts those settled, refused ones too', async () => {
    let refuse = false;
    const { w, count } = counted({ refuseChunk: () => refuse });
    expect(w.writes()).toStrictEqual({ settled: 0, inFlight: false });
    for (let i = 0; i < CHUNK + 1; i++) count(`k${i}`);
    const writing = w.flush();
    await new Promise((r) => setImmediate(r));
    expect(w.writes()).toStrictEqual({ settled: 0, inFlight: true });
    await writing;
    expect(w.writes()).toStrictEqual({ settled: 2, inFlight: false });
    refuse = true;
    count('again');
    await w.flush();
    expect(w.writes()).toStrictEqual({ settled: 3, inFlight: false });
    refuse = false;
    await w.close();
  });

  /** An Analytics whose writes() answers each state of `states` in turn, then the last one. */
  const writing = (states: WriteState[]) => {
    let i = 0;
    return { writes: () => states[Math.min(i++, states.length - 1)]! } as unknown as Analytics;
  };

  it('reads again until no write started or settled between the read’s two looks, and takes the read then', async () => {
    let reads = 0;
    const quiet = { settled: 4, inFlight: false };
    // Read 1: a chunk under way before; read 2: one settled during it; read 3: quiet before and after.
    const analytics = writing([{ settled: 3, inFlight: true }, { settled: 4, inFlight: false }, { settled: 4, inFlight: false }, { settled: 5, inFlight: false }, quiet, quiet]);
    expect(await readBetweenWrites(analytics, async () => ++reads)).toBe(3);
  });

  it('takes the last read after a second of tries when the writes never pause (a stats read still answers)', async () => {
    let reads = 0;
    const last = await readBetweenWrites(writing([{ settled: 0, inFlight: true }]), async () => ++reads);
    expect([last > 1, last]).toStrictEqual([true, reads]);
  });
});
