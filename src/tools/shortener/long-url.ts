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
  if (href.startsWith(`${publicBaseUrl}/s/`)) throw urlIssue('is already a short link of this service');
  return href;
}
