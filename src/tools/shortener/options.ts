import { z } from 'zod';
import { ToolError } from '../../errors.js';
import type { Caller } from '../../registry.js';
import type { Services } from '../../services.js';
import { CODE_PATTERN, LINKS, MAX_URL_LENGTH, type LinkRecord } from './links.js';

export const MAX_TAGS = 10;
export const MAX_TAG_LENGTH = 30;
export const MAX_TITLE_LENGTH = 200;
export const MAX_EXTERNAL_ID_LENGTH = 100;

/** The input fields of a link's options, as url_shorten and url_update take them. */
export const optionFields = {
  expiresAt: z.iso.datetime({ offset: true }).describe('After this instant (ISO 8601 date-time, in the future) the link stops redirecting to url'),
  expiredUrl: z
    .string()
    .trim()
    .min(1)
    .max(MAX_URL_LENGTH)
    .describe('Where an expired or used-up link sends visitors (302); default: a 410 Gone page'),
  maxVisits: z.number().int().min(1).max(1_000_000_000).describe('Redirects allowed in all (HEAD counts nothing); then as expired'),
  tags: z
    .array(z.string().trim().min(1).max(MAX_TAG_LENGTH))
    .max(MAX_TAGS)
    .describe(`Up to ${MAX_TAGS} tags of at most ${MAX_TAG_LENGTH} characters (url_list filters by tag)`),
  title: z.string().trim().max(MAX_TITLE_LENGTH).describe(`A title for the owner, at most ${MAX_TITLE_LENGTH} characters`),
};

/** The options of a link as answers show them (only those set). */
export const optionsOutput = {
  expiresAt: z.string().optional().describe('When the link expires, ISO 8601'),
  expiredUrl: z.string().optional().describe('Where the link sends visitors once expired or used up'),
  maxVisits: z.number().int().optional().describe('Redirects allowed in all'),
  tags: z.array(z.string()).optional().describe('Its tags'),
  title: z.string().optional().describe('Its title'),
  externalId: z.string().optional().describe('The owner’s own id for it'),
};

export const codeInput = z.string().regex(CODE_PATTERN, 'must be 3-20 characters of A-Z a-z 0-9 _ -').describe('The short code (the part after /s/)');

/** An instant that must lie ahead: its ISO form. */
export function futureInstant(iso: string, now: number, field: string, tool: string): string {
  const t = Date.parse(iso);
  if (!(t > now)) throw new ToolError('INVALID_INPUT', `Invalid input for ${tool}: ${field} must be in the future`, [{ path: field, message: 'must be in the future' }]);
  return new Date(t).toISOString();
}

/** Tags without duplicates, in the order given. */
export function distinctTags(tags: readonly string[]): string[] {
  return [...new Set(tags)];
}

/** A link's options in an answer. */
export interface LinkOptions {
  expiresAt?: string;
  expiredUrl?: string;
  maxVisits?: number;
  tags?: string[];
  title?: string;
  externalId?: string;
}

/** The options of a stored link, for an answer (only those set). */
export function optionsOf(link: LinkRecord): LinkOptions {
  const out: LinkOptions = {};
  if (link.expiresAt) out.expiresAt = link.expiresAt;
  if (link.expiredUrl) out.expiredUrl = link.expiredUrl;
  if (typeof link.maxVisits === 'number') out.maxVisits = link.maxVisits;
  if (link.tags && link.tags.length > 0) out.tags = link.tags;
  if (link.title) out.title = link.title;
  if (link.externalId) out.externalId = link.externalId;
  return out;
}

/** The key a caller manages links with; keyless callers manage none. */
export function managingKey(caller: Caller, tool: string): string {
  if (caller.keyId === null) throw new ToolError('UNAUTHORIZED', `${tool} needs an API key: links created without one belong to nobody and cannot be managed`);
  return caller.keyId;
}

/** The same 404 for a code that does not exist and one another key owns (as for tasks). */
export function linkNotFound(code: string): ToolError {
  return new ToolError('NOT_FOUND', `No short link with code "${code}"`, { code });
}

/** The caller's own link, or the 404. */
export async function ownedLink(services: Services, keyId: string, code: string): Promise<LinkRecord> {
  const link = await services.store.collection(LINKS).get(code);
  if (!link || link.creatorKeyId !== keyId) throw linkNotFound(code);
  return link;
}
