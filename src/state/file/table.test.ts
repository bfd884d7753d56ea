import { describe, expect, it } from 'vitest';
import { growth, GROWTH_TIMEOUT_MS, MAX_GROWTH } from '../../../test/growth.js';
import { idHash } from './id-directory.js';
import { idFromBytes } from './parse-segment.js';
import { Segment, Table, textOf } from './table.js';
import { defineCollection } from '../types.js';

/** A file's bytes of `n` records, one per line, with each record's offsets (as the load gives them). */
function file(n: number, ids = Array.from({ length: n }, (_, i) => `c${i}`)): { buf: Buffer; at: Uint32Array; hashes: Uint32Array; ids: string[]; texts: string[] } {
  const texts = ids.map((code, i) => JSON.stringify({ code, url: `https://example.com/${i}` }));
  const at = new Uint32Array(2 * n);
  let text = '';
  let bytes = 0;
  texts.forEach((t, i) => {
    at[2 * i] = bytes;
    text += t;
    at[2 * i + 1] = bytes += Buffer.byteLength(t);
    text += ',\n';
    bytes += 2;
  });
  return { buf: Buffer.from(text), at, hashes: Uint32Array.from(ids, idHash), ids, texts };
}

describe('a segment read as loaded (issue 32: a redirect miss at 1M links)', () => {
  it('answers a record from its file bytes reading one id, not the thousand a map of the segment reads', () => {
    const f = file(1000);
    let reads = 0;
    const seg = new Segment(1, 0);
    seg.loadFile(f.hashes, undefined, undefined, f.buf, f.at, (buf, start, end) => (reads++, idFromBytes(buf, start, end, 'code')));
    for (const i of [0, 499, 999]) {
      const id = f.ids[i]!;
      const h = idHash(id);
      const before = reads;
      // The directory's confirmation, then the text: the id is read from the bytes once.
      expect(seg.holds(id, h)).toBe(true);
      expect(seg.text(id, h)).toBe(f.texts[i]);
      expect(reads - before).toBe(1);
    }
    expect(seg.text('c1000', idHash('c1000'))).toBeUndefined();
    expect(seg.holds('c1000', idHash('c1000'))).toBe(false);
    // Another id under the hash of a held one (a collision) is not taken for it.
    expect(seg.text('nope', idHash('c7'))).toBeUndefined();
    expect(seg.holds('nope', idHash('c7'))).toBe(false);
    expect(seg.text('c7', idHash('c7'))).toBe(f.texts[7]);
  });

  it('finds each record by its hash without a scan of the segment: n lookups in a segment of n records grow linearly', async () => {
    const lookups = (n: number) => {
      const f = file(n);
      const seg = new Segment(1, 0);
      seg.loadFile(f.hashes, undefined, undefined, f.buf, f.at, (buf, start, end) => idFromBytes(buf, start, end, 'code'));
      let found = 0;
      for (let i = 0; i < n; i++) if (seg.text(f.ids[i]!, f.hashes[i]!) === f.texts[i]) found++;
      expect(found).toBe(n);
      expect(seg.holds(`x${n}`, idHash(`x${n}`))).toBe(false);
    };
    // Until session 17 each lookup scanned the segment's hashes: n lookups grew as n² (≈ 16 × at 4n).
    const g = await growth(lookups, { from: 8000, max: 32_000 });
    expect(g.ratio, g.text).toBeLessThan(MAX_GROWTH);
  }, GROWTH_TIMEOUT_MS);

  it('tells apart two ids of equal hash in one segment as loaded, whichever is asked first', () => {
    // Two ids with the same 32-bit idHash (a birthday search: ≈ 2^16 tries).
    const seen = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i++) {
      const id = `c${i}`;
      const other = seen.get(idHash(id));
      if (other) pair = [other, id];
      else seen.set(idHash(id), id);
    }
    const [x, y] = pair;
    const ids = ['a', x, 'b', 'c', y, 'd'];
    for (const first of [x, y]) {
      const f = file(ids.length, ids);
      const seg = new Segment(1, 0);
      seg.loadFile(f.hashes, undefined, undefined, f.buf, f.at, (buf, start, end) => idFromBytes(buf, start, end, 'code'));
      for (const id of [first, first === x ? y : x, ...ids]) expect(seg.text(id, idHash(id))).toBe(f.texts[ids.indexOf(id)]);
      expect(seg.holds('zz', idHash(x))).toBe(false);
    }
  });

  it('reads what the table committed once the segment changed (its map built), and forgets a deleted record', () => {
    const table = new Table(defineCollection<{ code: string; url: string }>({ name: 'links_t', key: 'code', segmentSize: 1000 }));
    const f = file(50);
    const seg = table.segment(1);
    for (let i = 0; i < 50; i++) table.byId.add(f.ids[i]!, seg.slot, f.hashes[i]);
    seg.loadFile(f.hashes, undefined, undefined, f.buf, f.at, table.readId);
    expect(table.json('c3')).toBe(f.texts[3]);
    const changed = JSON.stringify({ code: 'c3', url: 'https://example.com/changed' });
    table.set('c3', changed, undefined, undefined);
    expect(table.json('c3')).toBe(changed);
    expect(textOf(seg, 'c3')).toBe(changed);
    expect(table.json('c4')).toBe(f.texts[4]);
    table.set('c4', undefined, undefined, undefined);
    expect(table.json('c4')).toBeUndefined();
    for (let i = 5; i < 50; i++) expect(table.json(f.ids[i]!)).toBe(f.texts[i]);
  });
});
