import { ToolError } from '../../errors.js';
import { MAX_URL_LENGTH } from './links.js';

function issue(message: string, field: string, tool: string): ToolError {
  return new ToolError('INVALID_INPUT', `Invalid input for ${tool}: ${field} ${message}`, [{ path: field, message }]);
}

/**
 * The long URL as it will be stored and redirected to: absolute http(s), no credentials
 * (`https://bank.example@evil.example` style links are a phishing staple), normalised by the
 * WHATWG parser (punycode host, percent-encoded path) so the Location header is always valid.
 */
export function normaliseLongUrl(raw: string, publicBaseUrl: string, field = 'url', tool = 'url_shorten'): string {
  const urlIssue = (m: string) => issue(m, field, tool);
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
  if (isOwnShortLink(u, publicBaseUrl)) throw urlIssue('is already a short link of this service');
  return href;
}

/** A host name as DNS compares it: lower case, without a root's trailing dot. */
function hostKey(host: string): string {
  return host.toLowerCase().replace(/\.+$/, '');
}

/**
 * Whether `u` names a short link of this service: its host (whatever the case, a trailing dot,
 * the scheme or the port: a redirect to itself over another spelling loops as well, counting a
 * visit per hop) and a path under `/s/` beside PUBLIC_BASE_URL's.
 */
function isOwnShortLink(u: URL, publicBaseUrl: string): boolean {
  const base = new URL(publicBaseUrl);
  return hostKey(u.hostname) === hostKey(base.hostname) && u.pathname.startsWith(`${base.pathname.replace(/\/+$/, '')}/s/`);
}
