import { z } from 'zod';
import { toToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { createLink, ownershipOf } from './create.js';
import { shortUrlFor } from './links.js';
import { shortenInput, shortenOutput } from './url-shorten.js';

/** Links one url_shorten_bulk call creates at most. */
export const MAX_BULK_LINKS = 100;

// A created link answers its code and short URL (the rest is what was sent: url_list has it all).
const created = z.object({
  ok: z.literal(true),
  code: shortenOutput.code,
  shortUrl: shortenOutput.shortUrl,
  existing: shortenOutput.existing,
});
const failed = z.object({
  ok: z.literal(false),
  error: z.object({
    code: z.string().describe('The error code url_shorten would answer (CONFLICT, INVALID_INPUT, RATE_LIMITED, STORAGE_UNAVAILABLE …)'),
    message: z.string(),
  }),
});

/**
 * Many url_shorten calls in one (Dub's and Kutt's bulk create; issue 32 names it among the most
 * asked for): each link created as url_shorten creates it — the same checks, the same daily cap
 * of links, externalId idempotent — in the order given, each with its own outcome. One call
 * against the call limits; each link against the links per day.
 */
export const urlShortenBulk = defineTool({
  name: 'url_shorten_bulk',
  title: 'Create many short links',
  description:
    `Create up to ${MAX_BULK_LINKS} short links in one call, each as url_shorten would (same fields, same rules, the daily cap on links counting each). ` +
    'Answers one result per link, in order: the link (ok: true) or why it was not created (ok: false, the error url_shorten would give), so one taken code does not stop the others. ' +
    'Use externalId on each link to make a retry safe.',
  input: z.object({
    links: z.array(shortenInput).min(1).max(MAX_BULK_LINKS).describe(`The links to create, 1-${MAX_BULK_LINKS}, each what url_shorten takes`),
  }),
  output: z.object({
    results: z.array(z.discriminatedUnion('ok', [created, failed])).describe('One per link asked for, in the same order'),
    created: z.number().int().describe('Links created by this call'),
    existing: z.number().int().describe('Links an earlier create with the same externalId had made (answered, not created)'),
    failed: z.number().int().describe('Links not created'),
    managed: shortenOutput.managed,
    note: shortenOutput.note,
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  rest: { method: 'POST', path: '/api/links/bulk' },
  example: { links: [{ url: 'https://example.com/launch', code: 'launch' }, { url: 'https://example.com/docs', tags: ['docs'] }] },
  handler: async (input, ctx) => {
    const results: z.infer<typeof created | typeof failed>[] = [];
    let made = 0;
    let existing = 0;
    // One at a time, in order: a custom code or externalId given twice resolves as two calls would.
    for (const item of input.links) {
      try {
        const r = await createLink(item, ctx);
        if (r.existing) existing++;
        else made++;
        const link = { ok: true as const, code: r.link.code, shortUrl: shortUrlFor(ctx.services, r.link.code) };
        results.push(r.existing ? { ...link, existing: true } : link);
      } catch (err) {
        // What url_shorten would answer (a storage fault logged and named, anything else INTERNAL).
        const e = toToolError(err, (msg, cause) => ctx.services.log.warn(`url_shorten_bulk: ${msg}`, cause));
        results.push({ ok: false, error: { code: e.code, message: e.message } });
      }
    }
    // Whose links they are is the caller's, the same for all: said once (as url_shorten says it).
    return { results, created: made, existing, failed: results.length - made - existing, ...ownershipOf(ctx.caller.keyId, ctx.caller.keyId) };
  },
});
