import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { CODE_PATTERN, LINKS, linkCodes, linkOwnerKey, MAX_URL_LENGTH, SHORT_LINK_QUOTA, shortUrlFor, utcDay, type LinkRecord } from './links.js';

/** Collisions among 62^7 codes are rare; this many in a row means something is wrong. */
const MAX_CODE_ATTEMPTS = 8;

function urlIssue(message: string): ToolError {
  return new ToolError('INVALID_INPUT', `Invalid input for url_shorten: url ${message}`, [{ path: 'url', message }]);
}

/**
 * The long URL as it will be stored and redirected to: absolute http(s), no credentials
 * (`https://bank.example@evil.example` style links are a phishing staple), normalised by the
 * WHATWG parser (punycode host, percent-encoded path) so the Location header is always valid.
 */
export function normaliseLongUrl(raw: string, publicBaseUrl: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw urlIssue('is not an absolute URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw urlIssue(`must use http or https, not ${u.protocol.slice(0, 20)}`);
  if (u.hostname === '') throw urlIssue('has no host');
  if (u.username !== '' || u.password !== '') throw urlIssue('must not contain credentials (user:password@)');
  const href = u.href;
  if (href.length > MAX_URL_LENGTH) throw urlIssue(`is longer than ${MAX_URL_LENGTH} characters once normalised`);
  if (href.startsWith(`${publicBaseUrl}/s/`)) throw urlIssue('is already a short link of this service');
  return href;
}

export const urlShorten = defineTool({
  name: 'url_shorten',
  title: 'URL shortener',
  description:
    'Create a short link that redirects (HTTP 302) to a long http(s) URL and counts clicks. ' +
    'Optionally choose the code; otherwise 7 random base62 characters are generated. A taken code is a conflict.',
  input: z.object({
    url: z
      .string()
      .trim()
      .min(1)
      .max(MAX_URL_LENGTH)
      .describe(`The long URL to redirect to: absolute http or https, at most ${MAX_URL_LENGTH} characters, no user:password@`),
    code: z
      .string()
      .regex(CODE_PATTERN, 'must be 3-20 characters of A-Z a-z 0-9 _ -')
      .optional()
      .describe('Custom short code, 3-20 characters of A-Z a-z 0-9 _ - (case-sensitive); omit for a random one'),
  }),
  output: z.object({
    shortUrl: z.string().describe('The short link: {PUBLIC_BASE_URL}/s/{code}'),
    code: z.string().describe('The short code'),
    url: z.string().describe('The long URL, normalised'),
    createdAt: z.string().describe('Creation time, ISO 8601'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  errors: ['CONFLICT'],
  rest: { method: 'POST', path: '/api/shorten', status: 201 },
  example: { url: 'https://example.com/a/very/long/path?with=query', code: 'my-link' },
  handler: async ({ url, code }, ctx) => {
    const { services, caller } = ctx;
    const longUrl = normaliseLongUrl(url, services.config.publicBaseUrl);
    const now = services.clock.now();
    const creator = linkOwnerKey(caller);
    const record = (c: string): LinkRecord => ({
      code: c,
      url: longUrl,
      createdAt: new Date(now).toISOString(),
      creator,
      creatorKeyId: caller.keyId,
      creatorDay: `${creator}|${utcDay(now)}`,
    });
    const links = services.store.collection(LINKS);
    // Short links per day (docs/contract.md §5): counted from the stored links; the count and the
    // insert are one atomic step (insertCapped), in this process and across instances on Redis.
    const max = await services.auth.dailyCap(caller, SHORT_LINK_QUOTA.limit);
    const create = async (r: LinkRecord): Promise<boolean> => {
      if (max === undefined) return links.insert(r);
      const res = await links.insertCapped(r, { within: { index: 'creatorDay', eq: r.creatorDay }, max });
      if (res === 'full') throw services.auth.quotaExceeded(caller, SHORT_LINK_QUOTA, now, max);
      return res === 'inserted';
    };
    let link: LinkRecord | undefined;
    if (code !== undefined) {
      const r = record(code);
      if (!(await create(r))) throw new ToolError('CONFLICT', `The short code "${code}" is already taken`, { code });
      link = r;
    } else {
      for (let i = 0; i < MAX_CODE_ATTEMPTS && !link; i++) {
        const r = record(linkCodes.generate());
        if (await create(r)) link = r;
      }
      if (!link) throw new Error(`no free short code after ${MAX_CODE_ATTEMPTS} attempts`);
    }
    return { shortUrl: shortUrlFor(services, link.code), code: link.code, url: link.url, createdAt: link.createdAt };
  },
});
