/**
 * The rules of `Collection.add` every backend applies alike (checked deltas, capped distinct
 * fields), so the file and Redis stores accept, refuse and count the same things.
 */
import type { Rec } from './records.js';
import { StoreError, type AddItem, type AddManyOptions, type Collection, type CounterCap } from './types.js';

/** Longest counter field name (a referrer host is at most 253). */
export const MAX_COUNTER_FIELD = 300;
/** Most deltas in one `add`. */
export const MAX_COUNTER_DELTAS = 1000;
/** Most items in one `addMany`. */
export const MAX_ADD_ITEMS = 1000;
/**
 * How long an addMany token (`once`) is remembered after its batch was applied. A timed-out
 * command runs when Redis answers again, and the same batch sent again follows it on the same
 * connection within seconds: two minutes is ample, and bounds the tokens kept (one key per
 * chunk and shard: ≈ 36k keys, a few MB, at 300 chunks a second).
 */
export const ONCE_TTL_MS = 2 * 60_000;
/** Longest addMany token. */
const MAX_TOKEN = 200;
/** Most caps in one `add`. */
const MAX_CAPS = 32;
// Control characters: a field name travels inside the Redis reply's "\0"-joined text.
const CONTROL = /[\u0000-\u001f]/;

/**
 * Field names that passed the name check (non-empty, short, no control character, not
 * `__proto__`): a visit's counts reuse a few hundred names, each tested once instead of at
 * every add (issue 32). Bounded: emptied when full.
 */
const goodFields = new Set<string>();
const MAX_GOOD_FIELDS = 10_000;

/** The checked deltas as [field, delta] pairs; throws BAD_RECORD. */
export function checkDeltas(name: string, key: string, init: Rec, deltas: Readonly<Record<string, number>>): [string, number][] {
  if (typeof init !== 'object' || init === null) throw new StoreError('BAD_RECORD', `${name}: add needs an init record`);
  return fieldsOf(name, deltas).map((f) => {
    const n = deltas[f]!;
    checkField(name, key, init, f, n);
    return [f, n];
  });
}

/** The checked maxima of an `add` as [field, value] pairs (the deltas' rules; not a delta's field too); throws BAD_RECORD. */
export function checkMax(name: string, key: string, init: Rec, max: Readonly<Record<string, number>> | undefined, deltas: readonly [string, number][]): [string, number][] {
  if (max === undefined) return [];
  const out = checkDeltas(name, key, init, max);
  for (const [f] of out) if (deltas.some(([d]) => d === f)) throw new StoreError('BAD_RECORD', `${name}: "${f}" cannot be both added to and kept as a maximum`);
  return out;
}

/**
 * An `add`'s deltas checked as checkDeltas checks them (same errors), encoded in one pass as
 * Redis's ADDN script reads them: "\0field\0delta" each (field names hold no control
 * character). No pair arrays: a flush of the visit counts adds thousands of records (issue 32).
 */
export function encodeDeltas(name: string, key: string, init: Rec, deltas: Readonly<Record<string, number>>): string {
  let out = '';
  for (const f of fieldsOf(name, deltas)) {
    const n = deltas[f]!;
    checkField(name, key, init, f, n);
    out += `\0${f}\0${n}`;
  }
  return out;
}

/**
 * An `add`'s maxima checked as checkMax checks them (after its deltas), encoded as ADDN reads
 * them: their number, then "\0field\0value" each.
 */
export function encodeMaxima(name: string, key: string, init: Rec, max: Readonly<Record<string, number>> | undefined, deltas: Readonly<Record<string, number>>): string {
  if (max === undefined) return '0';
  let out = '';
  const fields = fieldsOf(name, max);
  for (const f of fields) {
    const n = max[f]!;
    checkField(name, key, init, f, n);
    if (Object.prototype.hasOwnProperty.call(deltas, f)) throw new StoreError('BAD_RECORD', `${name}: "${f}" cannot be both added to and kept as a maximum`);
    out += `\0${f}\0${n}`;
  }
  return `${fields.length}${out}`;
}

/** The fields of an add's deltas (or maxima), at most MAX_COUNTER_DELTAS; throws BAD_RECORD. */
function fieldsOf(name: string, deltas: unknown): string[] {
  if (typeof deltas !== 'object' || deltas === null || Array.isArray(deltas)) throw new StoreError('BAD_RECORD', `${name}: add takes an object of deltas`);
  const fields = Object.keys(deltas);
  if (fields.length > MAX_COUNTER_DELTAS) throw new StoreError('BAD_RECORD', `${name}: at most ${MAX_COUNTER_DELTAS} deltas per add`);
  return fields;
}

/** One delta's (or maximum's) field and number, checked; throws BAD_RECORD. */
function checkField(name: string, key: string, init: Rec, f: string, n: unknown): void {
  if (!goodFields.has(f)) {
    if (f === '' || f.length > MAX_COUNTER_FIELD || CONTROL.test(f) || f === '__proto__') throw new StoreError('BAD_RECORD', `${name}: "${f.slice(0, 40)}" cannot be a counter field`);
    if (goodFields.size >= MAX_GOOD_FIELDS) goodFields.clear();
    goodFields.add(f);
  }
  if (f === key || Object.prototype.hasOwnProperty.call(init, f)) throw new StoreError('BAD_RECORD', `${name}: "${f}" is a field of the record, not a counter`);
  if (!Number.isSafeInteger(n)) throw new StoreError('BAD_RECORD', `${name}: the delta of "${f}" must be a safe integer`);
}

/** Keeps the larger of each field's value and the given one in `rec` (mutated); an absent field takes it. */
export function applyMax(rec: Rec, max: readonly [string, number][]): void {
  for (const [f, n] of max) {
    const cur = rec[f];
    if (typeof cur !== 'number' || n > cur) rec[f] = n;
  }
}

/** Checks caps; throws BAD_RECORD. */
export function checkCaps(name: string, caps: readonly CounterCap[] | undefined): readonly CounterCap[] {
  if (caps === undefined) return [];
  if (!Array.isArray(caps) || caps.length > MAX_CAPS) throw new StoreError('BAD_RECORD', `${name}: caps must be a list of at most ${MAX_CAPS}`);
  for (const c of caps) {
    const ok = typeof c.prefix === 'string' && c.prefix !== '' && Number.isSafeInteger(c.max) && c.max >= 0 && typeof c.overflow === 'string' && c.overflow.startsWith(c.prefix) && c.overflow !== '__proto__' && !CONTROL.test(c.overflow);
    if (!ok) throw new StoreError('BAD_RECORD', `${name}: a cap needs a prefix, a max ≥ 0 and an overflow field starting with the prefix`);
  }
  return caps;
}

/**
 * Adds the deltas into `rec` (mutated): existing fields grow, new ones start from 0, or go
 * to their cap's overflow once the cap's prefix holds `max` distinct fields.
 */
export function applyDeltas(rec: Rec, deltas: readonly [string, number][], caps: readonly CounterCap[]): void {
  let counts: number[] | undefined;
  for (const [f, n] of deltas) {
    let field = f;
    if (!Object.prototype.hasOwnProperty.call(rec, f)) {
      const i = caps.findIndex((c) => f.startsWith(c.prefix) && f !== c.overflow);
      if (i >= 0) {
        counts ??= caps.map((c) => Object.keys(rec).filter((k) => k.startsWith(c.prefix) && k !== c.overflow).length);
        if (counts[i]! >= caps[i]!.max) field = caps[i]!.overflow;
        else counts[i]!++;
      }
    }
    const cur = rec[field];
    rec[field] = (typeof cur === 'number' ? cur : 0) + n;
  }
}

/** Checks an `addMany` batch itself (its items are checked one by one); throws BAD_RECORD. */
export function checkItems<T>(def: { name: string; indexes?: readonly string[] }, items: readonly AddItem<T>[], opts: AddManyOptions): void {
  const name = def.name;
  if (!Array.isArray(items) || items.length > MAX_ADD_ITEMS) throw new StoreError('BAD_RECORD', `${name}: addMany takes a list of at most ${MAX_ADD_ITEMS} items`);
  for (const it of items) if (typeof it !== 'object' || it === null) throw new StoreError('BAD_RECORD', `${name}: an addMany item must be an object`);
  if (opts.once !== undefined) {
    if (typeof opts.once !== 'string' || opts.once === '' || opts.once.length > MAX_TOKEN) throw new StoreError('BAD_RECORD', `${name}: once must be a token of 1 to ${MAX_TOKEN} characters`);
    if ((def.indexes?.length ?? 0) > 0) throw new StoreError('BAD_RECORD', `${name}: once needs a collection without indexes`);
  }
  checkCaps(name, opts.caps);
}

/** The tokens of the batches an embedded collection applied lately (`once`), by collection. */
const applied = new WeakMap<object, Map<string, number>>();

/** The tokens `coll` applied within ONCE_TTL_MS (those past their time dropped). */
function tokensOf(coll: object, now: number): Map<string, number> {
  let tokens = applied.get(coll);
  if (!tokens) applied.set(coll, (tokens = new Map()));
  // Oldest first (insertion order).
  for (const [t, at] of tokens) {
    if (now - at < ONCE_TTL_MS) break;
    tokens.delete(t);
  }
  return tokens;
}

/** An item applied (one shared, frozen outcome). */
export const FULFILLED: PromiseFulfilledResult<void> = Object.freeze({ status: 'fulfilled', value: undefined });

/**
 * An embedded collection's `addMany` around its own way of applying the items (`apply`, given the
 * options without the token): the batch checked, and its token (`once`) honoured — in one
 * process an item is applied or refused for certain, so a token is remembered once its whole
 * batch was applied, and guards only against the same batch sent twice.
 */
export async function addOnce<T>(
  coll: object,
  def: { name: string; indexes?: readonly string[] },
  items: readonly AddItem<T>[],
  opts: AddManyOptions,
  apply: (opts: Omit<AddManyOptions, 'once'>) => Promise<PromiseSettledResult<void>[]>,
): Promise<PromiseSettledResult<void>[]> {
  checkItems(def, items, opts);
  const { once, ...rest } = opts;
  if (once !== undefined && tokensOf(coll, performance.now()).has(once)) return items.map(() => FULFILLED);
  const out = await apply(rest);
  if (once !== undefined && out.every((r) => r.status === 'fulfilled')) {
    const now = performance.now();
    tokensOf(coll, now).set(once, now);
  }
  return out;
}

/**
 * `addMany` as one `add` per item, called in order: what a store has nothing to batch with
 * (the memory store) or cannot batch (Redis indexes, the file store's durable adds).
 */
export function addEach<T extends object>(coll: Collection<T>, def: { name: string; indexes?: readonly string[] }, items: readonly AddItem<T>[], opts: AddManyOptions = {}): Promise<PromiseSettledResult<void>[]> {
  return addOnce(coll, def, items, opts, (addOpts) => Promise.allSettled(items.map((it) => coll.add(it.id, it.deltas, { ...addOpts, init: it.init, ...(it.max ? { max: it.max } : {}) }))));
}
