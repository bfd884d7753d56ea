import { z } from 'zod';
import { defineTool, richResult } from '../../registry.js';
import { createLink, linkAnswer } from './create.js';
import { CODE_PATTERN, MAX_URL_LENGTH } from './links.js';
import { MAX_EXTERNAL_ID_LENGTH, optionFields, optionsOutput } from './options.js';

export { normaliseLongUrl } from './long-url.js';

/** What url_shorten takes (url_shorten_bulk takes a list of them). */
export const shortenInput = z.object({
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
  expiresAt: optionFields.expiresAt.optional(),
  expiredUrl: optionFields.expiredUrl.optional(),
  maxVisits: optionFields.maxVisits.optional(),
  tags: optionFields.tags.optional(),
  title: optionFields.title.optional(),
  externalId: z
    .string()
    .trim()
    .min(1)
    .max(MAX_EXTERNAL_ID_LENGTH)
    .optional()
    .describe(`Your own id for the link (needs an API key), at most ${MAX_EXTERNAL_ID_LENGTH} characters: a second create with it returns the existing link (200, not 201)`),
});

/** What url_shorten answers for a link (url_shorten_bulk: each created link). */
export const shortenOutput = {
  shortUrl: z.string().describe('The short link: {PUBLIC_BASE_URL}/s/{code}'),
  code: z.string().describe('The short code'),
  url: z.string().describe('The long URL, normalised'),
  createdAt: z.string().describe('Creation time, ISO 8601'),
  ...optionsOutput,
  managed: z.boolean().describe('Whether the link belongs to the calling API key (and can be listed, updated, deleted)'),
  note: z.string().optional().describe('For a link created without an API key: that it cannot be managed'),
  existing: z.boolean().optional().describe('true when an earlier create with the same externalId made this link (nothing new was created)'),
};

export const urlShorten = defineTool({
  name: 'url_shorten',
  title: 'URL shortener',
  description:
    'Create a short link that redirects (HTTP 302) to a long http(s) URL and counts clicks. ' +
    'Optionally choose the code; otherwise 7 random base62 characters are generated. A taken code is a conflict. ' +
    'With an API key the link is yours to list, update and delete (url_list, url_update, url_delete); it may expire (expiresAt), ' +
    'allow a number of visits (maxVisits), carry tags and a title, and an externalId makes the create idempotent (the same externalId answers the existing link).',
  input: shortenInput,
  output: z.object(shortenOutput),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  errors: ['CONFLICT'],
  rest: { method: 'POST', path: '/api/shorten', status: 201, altStatus: { status: 200, description: 'The link an earlier create with the same externalId made' } },
  example: { url: 'https://example.com/a/very/long/path?with=query', code: 'my-link' },
  handler: async (input, ctx) => {
    const { link, existing } = await createLink(input, ctx);
    const answer = linkAnswer(ctx.services, link, ctx.caller.keyId);
    return existing ? richResult({ json: { ...answer, existing: true }, status: 200 }) : answer;
  },
});
