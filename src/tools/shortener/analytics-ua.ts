import Bowser from 'bowser';
import { createIsbotFromList, isbotPatterns, list as isbotList } from 'isbot';

/**
 * What a visit's User-Agent tells the analytics: whether it is a crawler or link-preview
 * fetcher, and the browser, OS and device families. Only these families are counted; the
 * User-Agent string itself is never stored (docs/shortener.md, Privacy).
 */
export interface UaInfo {
  bot: boolean;
  /** Browser family (bowser's name), or the bot's name; 'other' when unknown. */
  browser: string;
  /** OS family, 'other' when unknown. */
  os: string;
  device: DeviceType;
}

export const DEVICE_TYPES = ['desktop', 'mobile', 'tablet', 'bot', 'other'] as const;
export type DeviceType = (typeof DEVICE_TYPES)[number];

/**
 * User-Agents of HTTP libraries and command-line clients (curl, node, python-requests, Java…)
 * and of headless Chrome. isbot flags them all through a few catch-all patterns; they are
 * scripts and automation a person runs, not crawlers or preview fetchers, so their visits stay
 * clicks (as they always were). The patterns they match are left out of isbot's list below.
 */
const SCRIPT_CLIENTS = [
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36',
  'node', 'undici', 'curl/8.5.0', 'Wget/1.21', 'python-requests/2.31', 'Python-urllib/3.11', 'axios/1.6.2', 'Go-http-client/1.1',
  'okhttp/4.12.0', 'Java/17.0.2', 'got (https://github.com/sindresorhus/got)', 'HTTPie/3.2.2', 'libwww-perl/6.72', 'PostmanRuntime/7.36.0',
];
const GENERIC = new Set(SCRIPT_CLIENTS.flatMap((ua) => isbotPatterns(ua)));
/** Preview fetchers isbot finds only through the catch-all patterns dropped above. */
const PREVIEW_FETCHERS = ['iframely', 'embedly', 'vkshare'];

/** isbot without its catch-all patterns for bare HTTP libraries: named crawlers and preview fetchers. */
export const isCrawler: (ua: string) => boolean = createIsbotFromList([...isbotList.filter((p) => !GENERIC.has(p)), ...PREVIEW_FETCHERS]);

/** Longest User-Agent parsed (longer ones are cut: a hostile header must not cost more). */
const UA_MAX = 512;
/** Distinct User-Agents remembered; they repeat, so most visits skip the parse. */
export const UA_CACHE_MAX = 2000;

/**
 * The names kept: bowser's own browser (and crawler) names and OS names. For a User-Agent it
 * does not know, bowser names the browser after the text before its first `/`, which is the
 * sender's own words (`MyApp user=alice token=…/2.0`); such a name is counted as 'other', so
 * no text of a User-Agent is stored (session 24's review).
 */
const BROWSER_NAMES = new Set(Object.values(Bowser.BROWSER_MAP));
const OS_NAMES = new Set(Object.values(Bowser.OS_MAP));

function known(name: string | undefined, names: Set<string>): string {
  return name !== undefined && names.has(name) ? name : 'other';
}

function parse(ua: string): UaInfo {
  const bot = isCrawler(ua);
  if (ua === '') return { bot, browser: 'other', os: 'other', device: 'other' };
  const p = Bowser.parse(ua);
  const type = p.platform.type;
  const device: DeviceType = bot ? 'bot' : type === 'desktop' || type === 'mobile' || type === 'tablet' ? type : 'other';
  return { bot, browser: known(p.browser.name, BROWSER_NAMES), os: known(p.os.name, OS_NAMES), device };
}

/** A bounded LRU of parsed User-Agents (per process). */
export class UaCache {
  readonly #max: number;
  readonly #map = new Map<string, UaInfo>();

  constructor(max = UA_CACHE_MAX) {
    this.#max = max;
  }

  /** The families of a User-Agent (absent: ''), parsed once while it stays in the cache. */
  info(ua: string | undefined): UaInfo {
    const key = (ua ?? '').slice(0, UA_MAX);
    const hit = this.#map.get(key);
    if (hit) {
      // Most recent last: the oldest is evicted first.
      this.#map.delete(key);
      this.#map.set(key, hit);
      return hit;
    }
    const info = parse(key);
    if (this.#map.size >= this.#max) this.#map.delete(this.#map.keys().next().value!);
    this.#map.set(key, info);
    return info;
  }

  get size(): number {
    return this.#map.size;
  }
}

/**
 * The common case without a URL parse: http(s), no credentials, an ASCII DNS name whose last
 * label starts with a letter (so not an IPv4 address in any of the forms URL normalises), an
 * optional port below 10000 (a larger one may be out of range). Anything else goes through URL.
 */
const PLAIN_HOST = /^https?:\/\/((?:[a-z0-9-]+\.)*[a-z][a-z0-9-]*)(?::\d{1,4})?(?:[/?#]|$)/i;

/** Longest host kept (a DNS name is at most 253 characters). */
const HOST_MAX = 253;

/**
 * The host of a Referer, lower-cased: 'direct' when there is none, 'other' when it is not an
 * absolute http(s) URL with a host name (an IP address is 'other' too). The path, query and any
 * credentials are dropped.
 */
export function referrerHost(referer: string | undefined): string {
  if (referer === undefined || referer === '') return 'direct';
  const plain = PLAIN_HOST.exec(referer)?.[1];
  if (plain !== undefined && plain.length <= HOST_MAX && !plain.includes('xn--')) return plain.toLowerCase();
  if (!URL.canParse(referer)) return 'other';
  const u = new URL(referer);
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '') return 'other';
  const host = u.hostname.toLowerCase();
  // An address is no site's name, and it may be someone's (an intranet or home machine): not kept.
  return host.length > HOST_MAX || isAddress(host) ? 'other' : host;
}

/** An IPv4 address as URL normalises one (any form: decimal, hex, short), or an IPv6 one in brackets. */
function isAddress(host: string): boolean {
  return host.startsWith('[') || /^\d{1,3}(\.\d{1,3}){3}$/.test(host);
}
