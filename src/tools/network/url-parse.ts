import { domainToUnicode } from 'node:url';
import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';

/** Longest `url` or `base` accepted: well past any real URL (browsers cap around 2 MB; servers at 8-16 KB). */
export const MAX_URL_CHARS = 16_384;

// The WHATWG URL standard's special schemes: they have hosts that are domains or IP addresses.
const SPECIAL = new Set(['http:', 'https:', 'ws:', 'wss:', 'ftp:', 'file:']);

/** The hostname for people: IDNA A-labels (xn--) turned back into Unicode; IP literals and opaque hosts as they are. */
function unicodeHost(url: URL): string {
  const h = url.hostname;
  if (!SPECIAL.has(url.protocol) || h === '' || h.startsWith('[')) return h;
  return domainToUnicode(h) || h;
}

export const urlParse = defineTool({
  name: 'url_parse',
  title: 'URL parser (WHATWG)',
  description:
    'Parse a URL exactly as browsers and Node do (the WHATWG URL Standard), optionally relative to a base URL: protocol, username, password, host, hostname (ASCII/punycode) and hostname_unicode, port (empty for the scheme default), pathname (dot segments resolved, percent-encoded), search, hash, origin, the normalised href, and the query as ordered [name, value] pairs (form-decoded: + is a space).',
  input: z.object({
    url: z.string().max(MAX_URL_CHARS).describe('The URL, absolute or (with base) relative'),
    base: z.string().max(MAX_URL_CHARS).optional().describe('Base URL that a relative `url` is resolved against'),
  }),
  output: z.object({
    href: z.string().describe('The whole URL, normalised'),
    protocol: z.string().describe('Scheme with its colon, e.g. https:'),
    username: z.string(),
    password: z.string(),
    host: z.string().describe('hostname plus :port when a non-default port is given'),
    hostname: z.string().describe('Host as serialised: lower-case, punycode (xn--) for IDNs, [brackets] for IPv6, IPv4 normalised (0x7f.1 → 127.0.0.1)'),
    hostname_unicode: z.string().describe('hostname with punycode labels decoded to Unicode (special schemes only)'),
    port: z.string().describe('Port, or empty when absent or the scheme default (443 for https)'),
    pathname: z.string(),
    search: z.string().describe('?query, or empty'),
    hash: z.string().describe('#fragment, or empty'),
    origin: z.string().describe('scheme://host[:port] for http(s)/ws(s)/ftp, "null" for other schemes (file: included)'),
    query: z.array(z.array(z.string()).length(2).describe('[name, value]')).describe('The query as [name, value] pairs in order, repeats kept, decoded as application/x-www-form-urlencoded'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'POST', path: '/api/url-parse' },
  example: { url: 'https://user@bücher.example:8443/a/../b?q=1&q=2&x=a+b#top' },
  handler: ({ url, base }) => {
    let parsedBase: URL | undefined;
    if (base !== undefined) {
      try {
        parsedBase = new URL(base);
      } catch {
        throw new ToolError('PARSE_ERROR', 'base is not a valid absolute URL', { field: 'base' });
      }
    }
    let u: URL;
    try {
      u = new URL(url, parsedBase);
    } catch {
      throw new ToolError('PARSE_ERROR', parsedBase ? 'url is not a valid URL relative to base' : 'url is not a valid absolute URL (give base to resolve a relative one)', { field: 'url' });
    }
    return {
      href: u.href,
      protocol: u.protocol,
      username: u.username,
      password: u.password,
      host: u.host,
      hostname: u.hostname,
      hostname_unicode: unicodeHost(u),
      port: u.port,
      pathname: u.pathname,
      search: u.search,
      hash: u.hash,
      origin: u.origin,
      query: [...u.searchParams],
    };
  },
});
