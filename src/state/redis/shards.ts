/**
 * Sharding of the Redis key layout (Redis Cluster): each collection's records spread over a
 * fixed number of shards by a hash of their id, each shard under its own hash tag
 * `{<collection>:<n>}`, so one collection spreads over every master while each record's
 * script (record, id list, indexes of that shard) stays in one slot. Reads that span a
 * collection (queries, counts, scans) merge the shards here.
 */
import type { ScriptedRedis } from './scripts.js';

/**
 * Shards per collection in Cluster mode. Fixed: an id's shard must not change while its record
 * lives. 16 spreads a collection over up to 16 masters (far past the three of a usual cluster)
 * while a query that spans a collection costs 16 range calls per page, sent at once.
 */
export const CLUSTER_SHARDS = 16;

/** FNV-1a over the UTF-16 code units: stable across processes and versions, cheap. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The shard (0 … shards-1) of a record id. */
export function shardOf(id: string, shards: number): number {
  return shards === 1 ? 0 : hash32(id) % shards;
}

/** Whether a reply error means "the slot is moving or its master is changing": the call may be sent again. */
export function isSlotMoving(err: unknown): boolean {
  const e = err instanceof Error ? err : undefined;
  const msg = e?.message ?? '';
  const cause = e?.cause instanceof Error ? e.cause.message : '';
  return /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b/.test(msg) || /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b/.test(cause) || /\b(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) /.test(msg);
}

const EMPTY = Buffer.alloc(0);

interface Cursor {
  zset: string;
  data: string;
  cnt: string;
  min: string;
  max: string;
  buf: { member: string; bytes: Buffer; json: string | null }[];
  pos: number;
  done: boolean;
}

export interface MergeRange {
  /** [zset, data hash, and for a `counters` collection its counter hashes' prefix] per shard. */
  sources: readonly (readonly [string, string, string?])[];
  min: string;
  max: string;
  rev: boolean;
  /** The zsets hold index keys (the id follows "\0\0"), not ids. */
  isIndex: boolean;
  /** Members fetched per shard and call. */
  page: number;
}

/**
 * Walks the union of one range over every shard in Redis's byte order (the order one zset
 * would give), fetching a page per shard as it empties. `take` returns false to stop.
 */
export async function mergeWalk(call: (fn: (r: ScriptedRedis) => Promise<unknown>) => Promise<unknown>, m: MergeRange, take: (json: string, member: string) => boolean): Promise<void> {
  const cursors: Cursor[] = m.sources.map(([zset, data, cnt]) => ({ zset, data, cnt: cnt ?? '', min: m.min, max: m.max, buf: [], pos: 0, done: false }));
  const many = cursors.length > 1;
  const fill = async (c: Cursor): Promise<void> => {
    const flat = (await call((r) => r.dtbRange(2, c.zset, c.data, c.min, c.max, m.rev ? '1' : '0', String(m.page), m.isIndex ? '1' : '0', c.cnt))) as (string | null)[];
    c.buf = [];
    c.pos = 0;
    for (let i = 0; i < flat.length; i += 2) c.buf.push({ member: flat[i]!, bytes: many ? Buffer.from(flat[i]!, 'utf8') : EMPTY, json: flat[i + 1] ?? null });
    if (c.buf.length < m.page) c.done = true;
    else {
      const last = c.buf[c.buf.length - 1]!.member;
      if (m.rev) c.max = `(${last}`;
      else c.min = `(${last}`;
    }
  };
  await Promise.all(cursors.map(fill));
  for (;;) {
    let best: Cursor | undefined;
    for (const c of cursors) {
      if (c.pos >= c.buf.length) continue;
      if (!best) best = c;
      else {
        const cmp = Buffer.compare(c.buf[c.pos]!.bytes, best.buf[best.pos]!.bytes);
        if (m.rev ? cmp > 0 : cmp < 0) best = c;
      }
    }
    if (!best) return;
    const head = best.buf[best.pos++]!;
    if (best.pos >= best.buf.length && !best.done) await fill(best);
    if (head.json !== null && !take(head.json, head.member)) return;
  }
}
