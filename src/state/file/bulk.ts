import { BTreeEx } from 'sorted-btree/extended/index.js';
import { compareKeys } from '../index-key.js';
import { newKeyTree, NODE_SIZE, type KeyTree } from './table.js';
import type { TurnBudget } from './turn-budget.js';

/** The work a job sharing a TurnBudget may do after each pause before it looks at the budget (ms). */
const SHARED_MIN_MS = 1;

/**
 * Long jobs (loading a collection, building its trees, committing a big batch) run in slices
 * and give the event loop back between them, so a request never waits for more than about one
 * slice. `budgetMs` is the work per slice; GC pauses come on top. With a `shared` TurnBudget
 * the slice is that budget's instead: jobs running side by side (a flush, the batches of lazy
 * writes) then take one slice per turn between them, not one each.
 */
export class Slicer {
  #start = performance.now();
  #n = 0;
  /** setImmediate turns taken so far (tests read it). */
  pauses = 0;

  constructor(
    readonly budgetMs = 8,
    /** Stops the job at its next pause (the store is closing). */
    readonly signal?: AbortSignal,
    readonly shared?: TurnBudget,
  ) {
    if (shared) this.#start = shared.now();
  }

  /** Call once per unit of work; every 64 units, yields if the slice is spent. */
  tick(): Promise<void> | undefined {
    if ((++this.#n & 63) !== 0) return undefined;
    return this.maybePause();
  }

  /** Yields if the slice is spent. */
  maybePause(): Promise<void> | undefined {
    if (this.shared) {
      // Its own first ms after each pause whatever the others spent: jobs sharing the budget
      // all progress (the first to run after a reset would otherwise take every turn's budget).
      if (this.shared.now() - this.#start < SHARED_MIN_MS) return undefined;
      const wait = this.shared.spend();
      return wait && this.#waited(wait);
    }
    return performance.now() - this.#start > this.budgetMs ? this.pause() : undefined;
  }

  async #waited(wait: Promise<void>): Promise<void> {
    this.pauses++;
    await wait;
    this.signal?.throwIfAborted();
    this.#start = this.shared!.now();
  }

  async pause(): Promise<void> {
    this.pauses++;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.signal?.throwIfAborted();
    this.#start = performance.now();
  }
}

/** Runs of this many keys are sorted in one go (a few ms each). */
const RUN = 4096;

/**
 * Sorts strings in code-unit order in slices: sorted runs, then bottom-up merges. A plain
 * sort of 1M keys holds the loop for about a second. Returns a sorted array (possibly `keys`
 * itself, reordered).
 */
export async function sortInSlices(keys: string[], slicer: Slicer): Promise<string[]> {
  for (let s = 0; s < keys.length; s += RUN) {
    const run = keys.slice(s, s + RUN).sort();
    for (let j = 0; j < run.length; j++) keys[s + j] = run[j]!;
    await slicer.maybePause();
  }
  let src = keys;
  let dst: string[] = new Array<string>(keys.length);
  for (let width = RUN; width < src.length; width *= 2) {
    for (let lo = 0; lo < src.length; lo += 2 * width) {
      await mergeInto(src, lo, Math.min(lo + width, src.length), Math.min(lo + 2 * width, src.length), dst, slicer);
    }
    [src, dst] = [dst, src];
    await slicer.maybePause();
  }
  return src;
}

/** Merges the sorted `src[lo, mid)` and `src[mid, hi)` into `dst[lo, hi)`, pausing as the slicer says. */
async function mergeInto(src: readonly string[], lo: number, mid: number, hi: number, dst: string[], slicer: Slicer): Promise<void> {
  let i = lo;
  let j = mid;
  let k = lo;
  while (i < mid && j < hi) {
    dst[k++] = src[i]! <= src[j]! ? src[i++]! : src[j++]!;
    if ((k & 1023) === 0) await slicer.maybePause();
  }
  while (i < mid) dst[k++] = src[i++]!;
  while (j < hi) dst[k++] = src[j++]!;
}

/** Sorted lists (code-unit order) merged into one, in slices. */
export async function mergeInSlices(lists: readonly string[][], slicer: Slicer): Promise<string[]> {
  let all = [...lists];
  while (all.length > 1) {
    const next: string[][] = [];
    for (let p = 0; p + 1 < all.length; p += 2) {
      const a = all[p]!;
      const b = all[p + 1]!;
      const out = new Array<string>(a.length + b.length);
      // One array holding both, so that mergeInto sees them as two adjacent runs.
      const both = a.concat(b);
      await slicer.maybePause();
      await mergeInto(both, 0, a.length, both.length, out, slicer);
      next.push(out);
    }
    if (all.length % 2 === 1) next.push(all[all.length - 1]!);
    all = next;
  }
  return all[0] ?? [];
}

/** Keys per bulk-loaded piece: one piece takes a few ms. */
const PIECE = 16384;

/**
 * A B+ tree of strictly ascending keys, built in slices: each piece is bulk-loaded, and pieces
 * are joined by union, which reuses the nodes of disjoint trees instead of copying them.
 */
export async function buildTreeInSlices(sorted: string[], slicer: Slicer): Promise<KeyTree> {
  if (sorted.length === 0) return newKeyTree();
  let tree: KeyTree | undefined;
  for (let s = 0; s < sorted.length; s += PIECE) {
    const keys = sorted.slice(s, s + PIECE);
    const piece = BTreeEx.bulkLoad<string, undefined>(keys, new Array<undefined>(keys.length), NODE_SIZE, compareKeys);
    tree = tree ? tree.union(piece, (_k, a) => a) : piece;
    await slicer.maybePause();
  }
  return tree!;
}
