import { describe, expect, it } from 'vitest';
import { IdDirectory, idHash } from './id-directory.js';

class Seg {
  readonly recs = new Map<string, number>();
  holds(id: string): boolean {
    return this.recs.has(id);
  }
  constructor(readonly slot: number) {}
  ids() {
    return this.recs.keys();
  }
}

describe('IdDirectory', () => {
  it('agrees with a Map through adds, moves and deletes, across growth and reuse of deleted slots', () => {
    const segs = Array.from({ length: 8 }, (_, slot) => new Seg(slot));
    const dir = new IdDirectory(segs);
    const model = new Map<string, Seg>();
    let seed = 1;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
    for (let step = 0; step < 60_000; step++) {
      const id = `id-${rand(5000)}`;
      const op = rand(10);
      const at = model.get(id);
      expect(dir.get(id)).toBe(at);
      if (!at && op < 6) {
        const seg = segs[rand(segs.length)]!;
        // Half through add, half through getOrAdd (which finds nothing, so adds).
        if (op < 3) dir.add(id, seg.slot);
        else expect(dir.getOrAdd(id, seg.slot)).toBeUndefined();
        seg.recs.set(id, step);
        model.set(id, seg);
      } else if (at && op === 9) {
        // getOrAdd of an id present: its segment, nothing added.
        expect(dir.getOrAdd(id, (at.slot + 1) % segs.length)).toBe(at);
      } else if (at && op < 8) {
        const to = segs[rand(segs.length)]!;
        dir.move(id, to.slot);
        at.recs.delete(id);
        to.recs.set(id, step);
        model.set(id, to);
      } else if (at) {
        expect(dir.delete(id)).toBe(at);
        at.recs.delete(id);
        model.delete(id);
      }
      expect(dir.size).toBe(model.size);
    }
    for (let i = 0; i < 5000; i++) expect(dir.get(`id-${i}`)).toBe(model.get(`id-${i}`));
    expect(new Map(dir.entries())).toStrictEqual(model);
    expect([...dir.keys()].sort()).toStrictEqual([...model.keys()].sort());
  });

  it('tells apart ids of the same hash (confirmed by the segment), wherever they are', () => {
    const segs = [0, 1].map((slot) => new Seg(slot));
    const dir = new IdDirectory(segs);
    // Every id given the same hash: each lookup has to walk and confirm.
    const h = 12345;
    const ids = Array.from({ length: 300 }, (_, i) => `same-${i}`);
    ids.forEach((id, i) => {
      segs[i % 2]!.recs.set(id, i);
      dir.add(id, i % 2, h);
    });
    ids.forEach((id, i) => expect(dir.get(id, h)).toBe(segs[i % 2]));
    expect(dir.get('same-300', h)).toBeUndefined();
    expect(dir.delete('same-7', h)).toBe(segs[1]);
    segs[1]!.recs.delete('same-7');
    expect(dir.get('same-7', h)).toBeUndefined();
    expect(dir.get('same-9', h)).toBe(segs[1]);
    expect(dir.size).toBe(299);
  });

  it('hashes to 32 bits, the same for the same id', () => {
    expect(idHash('abc')).toBe(idHash('abc'));
    expect(idHash('abc')).not.toBe(idHash('abd'));
    for (const id of ['', 'x', '日本', 'a'.repeat(1000)]) expect(idHash(id)).toBeGreaterThanOrEqual(0), expect(idHash(id)).toBeLessThan(2 ** 32);
  });
});

describe('IdDirectory.reserve', () => {
  it('keeps every id findable when it grows the table, before and after adds', () => {
    const segs = [new Seg(0)];
    const dir = new IdDirectory(segs);
    for (let i = 0; i < 3000; i++) {
      segs[0]!.recs.set(`k${i}`, i);
      dir.add(`k${i}`, 0);
      if (i === 1000) dir.reserve(100_000);
    }
    dir.reserve(10); // smaller than it holds: nothing changes
    for (let i = 0; i < 3000; i++) expect(dir.get(`k${i}`)).toBe(segs[0]);
    expect(dir.size).toBe(3000);
  });
});
