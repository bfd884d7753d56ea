import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { LINKS, type LinkRecord } from './links.js';
import { itemsOf, linkItem } from './link-item.js';
import { managingKey, MAX_TAG_LENGTH } from './options.js';

/** With a tag or search filter, at most this many of the owner's links are read per call (then a cursor). */
export const LIST_SCAN_MAX = 2000;
const BATCH = 200;
/** The instants with a 4-digit year, as createdAt (and so ownerTime) holds them. */
const FIRST_INSTANT = Date.parse('0000-01-01T00:00:00.000Z');
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

function badCursor(): ToolError {
  return new ToolError('INVALID_INPUT', 'Invalid input for url_list: cursor is not one this key was given', [{ path: 'cursor', message: 'unknown cursor' }]);
}

/** A cursor: the ownerTime index value of the last link answered, opaque to clients. */
function decodeCursor(cursor: string, keyId: string): string {
  let v: string;
  try {
    v = Buffer.from(cursor, 'base64url').toString('utf8');
  } catch {
    throw badCursor();
  }
  if (!v.startsWith(`${keyId}|`) || v.length > 200) throw badCursor();
  return v;
}

function matches(link: LinkRecord, tag: string | undefined, search: string | undefined): boolean {
  if (tag !== undefined && !(link.tags ?? []).includes(tag)) return false;
  if (search === undefined) return true;
  const s = search.toLowerCase();
  return link.code.toLowerCase().includes(s) || link.url.toLowerCase().includes(s) || (link.title ?? '').toLowerCase().includes(s);
}

const isoInstant = z.iso.datetime({ offset: true });

export const urlList = defineTool({
  name: 'url_list',
  title: 'List my short links',
  description:
    "List the calling API key's short links, newest first, each with its clicks. Filter by tag, by a search text (in the code, URL or title) " +
    'and by creation time; page with limit and the nextCursor of the previous answer. Needs an API key.',
  input: z.object({
    tag: z.string().trim().min(1).max(MAX_TAG_LENGTH).optional().describe('Only links carrying this tag'),
    search: z.string().trim().min(1).max(200).optional().describe('Only links whose code, URL or title contains this text (case-insensitive)'),
    createdAfter: isoInstant.optional().describe('Only links created after this instant (ISO 8601)'),
    createdBefore: isoInstant.optional().describe('Only links created before this instant (ISO 8601)'),
    limit: z.number().int().min(1).max(100).default(20).describe('Links per page, 1-100 (default 20)'),
    cursor: z.string().min(1).max(400).optional().describe('nextCursor of the previous page'),
  }),
  output: z.object({
    links: z.array(linkItem).describe('The links, newest first'),
    nextCursor: z.string().nullable().describe('Pass as cursor for the next page; null on the last one'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'GET', path: '/api/links' },
  example: { tag: 'launch', limit: 20 },
  handler: async ({ tag, search, createdAfter, createdBefore, limit, cursor }, { services, caller }) => {
    const keyId = managingKey(caller, 'url_list');
    // One owner's range of the ownerTime index (`key|createdAt|code`), walked newest first:
    // O(log n + links read), never the other owners' links.
    // An instant outside the years 0000-9999 has no 4-digit ISO form (toISOString writes
    // ±YYYYYY, which sorts apart): it bounds at an end of the range, or leaves the range empty.
    const [start, end] = [`${keyId}|`, `${keyId}}`];
    const after = createdAfter === undefined ? undefined : Date.parse(createdAfter);
    const before = createdBefore === undefined ? undefined : Date.parse(createdBefore);
    let gt = after === undefined || after < FIRST_INSTANT ? start : after > LAST_INSTANT ? end : `${keyId}|${new Date(after).toISOString()}|~`;
    let lt = before === undefined || before > LAST_INSTANT ? end : before < FIRST_INSTANT ? start : `${keyId}|${new Date(before).toISOString()}|`;
    if (cursor !== undefined) {
      const c = decodeCursor(cursor, keyId);
      if (c < lt) lt = c;
    }
    const links = services.store.collection(LINKS);
    const found: LinkRecord[] = [];
    const filtered = tag !== undefined || search !== undefined;
    let scanned = 0;
    let last: string | undefined;
    let more = true;
    while (found.length <= limit && more && scanned < (filtered ? LIST_SCAN_MAX : limit + 1)) {
      const want = filtered ? BATCH : limit + 1;
      const batch = gt < lt ? await links.query({ index: 'ownerTime', gt, lt, order: 'desc', limit: want }) : [];
      more = batch.length === want;
      for (const l of batch) {
        scanned++;
        if (matches(l, tag, search)) found.push(l);
        last = l.ownerTime ?? undefined;
        if (found.length > limit) break;
      }
      if (last !== undefined) lt = last;
    }
    let nextCursor: string | null = null;
    if (found.length > limit) {
      found.length = limit;
      nextCursor = Buffer.from(found[limit - 1]!.ownerTime!, 'utf8').toString('base64url');
    } else if (more && last !== undefined) {
      // The scan cap was reached: go on from the last link read.
      nextCursor = Buffer.from(last, 'utf8').toString('base64url');
    }
    return { links: await itemsOf(services, found), nextCursor };
  },
});
