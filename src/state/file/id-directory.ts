/**
 * Which segment holds each id of a table: an open-addressing hash table over typed arrays
 * instead of a Map of a million strings (issue 18). At start-up the load workers compute each
 * id's hash (idHash), so filling the directory costs the main thread one probe per record and
 * no string hashing; a Map of 1M entries cost ≈ 0.5 µs per insert here, and its backing store
 * was one more million pointers for every garbage collection to trace.
 *
 * The directory stores no ids: a slot holds the id's 32-bit hash and its segment's number in
 * `segments`, and a candidate is confirmed by the segment itself (`holds(id, hash)`). So a
 * segment must hold the id whenever the directory points there: add an id to its `recs`
 * before or after `add`, but remove it only after `delete` or `move`. An id is in exactly one
 * segment, so iterating the segments iterates the ids.
 */

/** A segment as the directory sees it. */
export interface Holder {
  /** Whether it holds `id`, whose idHash is `h`. */
  holds(id: string, h: number): boolean;
  /** Its ids (without building anything). */
  ids(): Iterable<string>;
}

/** 32-bit hash of an id's UTF-16 code units (FNV-1a, then murmur3's finaliser for the low bits). */
export function idHash(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const EMPTY = 0;
const GONE = -1;
const MIN_CAPACITY = 1024;

export class IdDirectory<S extends Holder> {
  /** Per slot: EMPTY, GONE (deleted), or 1 + the segment's place in `segments`. */
  #slots = new Int32Array(MIN_CAPACITY);
  #hashes = new Uint32Array(MIN_CAPACITY);
  #size = 0;
  #gone = 0;

  /** `segments[i]` is the segment whose `slot` is i (see Table.segment); it only grows. */
  constructor(private readonly segments: readonly S[]) {}

  get size(): number {
    return this.#size;
  }

  /** The slot of `id`, or -1. */
  #find(id: string, h: number): number {
    const mask = this.#slots.length - 1;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const v = this.#slots[i]!;
      if (v === EMPTY) return -1;
      if (v > 0 && this.#hashes[i] === h && this.segments[v - 1]!.holds(id, h)) return i;
    }
  }

  get(id: string, h = idHash(id)): S | undefined {
    const i = this.#find(id, h);
    return i < 0 ? undefined : this.segments[this.#slots[i]! - 1];
  }

  has(id: string): boolean {
    return this.#find(id, idHash(id)) >= 0;
  }

  /** Records a new `id` (not in the directory: the caller has checked) as in the segment whose slot is `seg`. */
  add(id: string, seg: number, h = idHash(id)): void {
    const mask = this.#slots.length - 1;
    let i = h & mask;
    while (this.#slots[i]! > 0) i = (i + 1) & mask;
    if (this.#slots[i] === GONE) this.#gone--;
    this.#slots[i] = seg + 1;
    this.#hashes[i] = h;
    this.#size++;
    if ((this.#size + this.#gone) * 2 > this.#slots.length) this.#grow();
  }

  /**
   * The segment `id` is in; if none, records it as in the segment whose slot is `seg` (one probe for what
   * `get` then `add` would do: the load's case).
   */
  getOrAdd(id: string, seg: number, h = idHash(id)): S | undefined {
    return this.getOrAddHashed(h, seg, (i) => i, id);
  }

  /**
   * getOrAdd for an id known by its hash `h`, whose text `idOf(of)` is only asked for when a
   * segment holds an id of the same hash (the load's case: its ids stay in the files' bytes).
   */
  getOrAddHashed<T>(h: number, seg: number, idOf: (of: T) => string, of: T): S | undefined {
    const mask = this.#slots.length - 1;
    let free = -1;
    let id: string | undefined;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const v = this.#slots[i]!;
      if (v === EMPTY) {
        if (free < 0) free = i;
        break;
      }
      if (v === GONE) {
        if (free < 0) free = i;
      } else if (this.#hashes[i] === h && this.segments[v - 1]!.holds((id ??= idOf(of)), h)) return this.segments[v - 1];
    }
    if (this.#slots[free] === GONE) this.#gone--;
    this.#slots[free] = seg + 1;
    this.#hashes[free] = h;
    this.#size++;
    if ((this.#size + this.#gone) * 2 > this.#slots.length) this.#grow();
    return undefined;
  }

  /** Records that `id`, in the directory, is now in the segment whose slot is `seg` (call it while the old segment still has it). */
  move(id: string, seg: number, h = idHash(id)): void {
    const i = this.#find(id, h);
    if (i < 0) throw new Error(`IdDirectory.move: ${id} is not in the directory`);
    this.#slots[i] = seg + 1;
  }

  /** Forgets `id` (call it while its segment still has it); returns the segment it was in. */
  delete(id: string, h = idHash(id)): S | undefined {
    const i = this.#find(id, h);
    if (i < 0) return undefined;
    const seg = this.segments[this.#slots[i]! - 1];
    this.#slots[i] = GONE;
    this.#size--;
    this.#gone++;
    return seg;
  }

  /** Makes room for `count` ids in all without growing again (a load knows about how many come). */
  reserve(count: number): void {
    if (count * 2 > this.#slots.length) this.#grow(count);
  }

  #grow(count = this.#size): void {
    const slots = this.#slots;
    const hashes = this.#hashes;
    // A quarter full after growing (half full triggers it); the same size when deletions filled it.
    let cap = slots.length;
    while (count * 4 > cap) cap *= 2;
    this.#slots = new Int32Array(cap);
    this.#hashes = new Uint32Array(cap);
    this.#gone = 0;
    const mask = cap - 1;
    for (let j = 0; j < slots.length; j++) {
      const v = slots[j]!;
      if (v <= 0) continue;
      let i = hashes[j]! & mask;
      while (this.#slots[i] !== EMPTY) i = (i + 1) & mask;
      this.#slots[i] = v;
      this.#hashes[i] = hashes[j]!;
    }
  }

  /** Every id with its segment (segment by segment). */
  *entries(): IterableIterator<[string, S]> {
    for (const seg of this.segments) for (const id of seg.ids()) yield [id, seg];
  }

  *keys(): IterableIterator<string> {
    for (const seg of this.segments) yield* seg.ids();
  }
}
