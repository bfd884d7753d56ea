import { ToolError } from '../errors.js';
import type { Config } from '../config.js';
import type { Caller } from '../core/caller.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../log.js';
import { defineCollection, type Store } from '../state/index.js';
import { ownerKey } from './owner.js';
import { clientAddress, limitAddress, TrustedProxies } from './ip.js';
import { KeyCache, type CachedKey } from './key-cache.js';
import { findApiKey, findApiKeyByHash, findApiKeyById, KEY_PREFIX, localKeyGeneration, type ApiKeyRecord } from './keys.js';
import { Limiter, nextUtcMidnight, rateLimitHeaders, SlidingCounter, type DailyCounts, type Decision, type WindowLimits } from './limiter.js';
import { SharedLimiter, SharedSlidingCounter, type CachedGeneration } from './shared-limiter.js';
import { REGISTER_LIMIT, type PlanLimits, type PlanName } from './plans.js';

/**
 * What Auth needs of the services (it is itself one of them, `services.auth`: named here field by
 * field, so that services.ts depends on auth and not the other way round).
 */
export interface AuthDeps {
  config: Config;
  clock: Clock;
  log: Logger;
  store: Store;
}

/** What the limits need to know of a tool (any tool is one). */
export interface MeteredTool {
  /** `free`: the call reports the budget without spending it. */
  metering?: 'metered' | 'free';
}

/** One persisted day count of the limiter: calls of `subject` on UTC `day`. */
export interface RateDayRecord {
  id: string;
  subject: string;
  day: string;
  count: number;
}

export const RATE_DAYS = defineCollection<RateDayRecord>({ name: 'rate_days', key: 'id', indexes: ['day'], segmentSize: 1000 });

/**
 * Day counts in the store. Written lazily (one increment per subject and event-loop turn, on
 * disk within LAZY_FLUSH_MS): a crash loses at most that much of counting, which only ever
 * errs in the caller's favour. Records of past days
 * are deleted the first time a new day is seen.
 */
export function storeDailyCounts(services: AuthDeps): DailyCounts {
  const coll = services.store.collection(RATE_DAYS);
  let prunedBefore = '';
  /**
   * Calls counted in this turn of the event loop and not yet handed to the store, by record id:
   * one increment by n per subject and turn instead of one per call (a record read, parsed and
   * rewritten in memory each time was a third of a limited call's CPU on the file store).
   */
  const pending = new Map<string, { subject: string; day: string; n: number }>();
  const write = () => {
    for (const [id, { subject, day, n }] of pending) {
      coll.increment(id, 'count', n, { init: { id, subject, day, count: 0 }, durability: 'lazy' }).catch((err: unknown) => {
        services.log.warn('rate limits: could not record a call', err);
      });
    }
    pending.clear();
  };
  return {
    async load(subject, day) {
      if (prunedBefore !== day) {
        prunedBefore = day;
        void coll
          .query({ index: 'day', lt: day })
          .then((old) => Promise.all(old.map((r) => coll.delete(r.id, { durability: 'lazy' }))))
          .catch((err: unknown) => services.log.warn('rate limits: could not delete old day counts', err));
      }
      const id = `${subject}|${day}`;
      const stored = (await coll.get(id))?.count ?? 0;
      // Counted but not handed to the store yet (this turn): part of the day all the same.
      return stored + (pending.get(id)?.n ?? 0);
    },
    add(subject, day) {
      const id = `${subject}|${day}`;
      const p = pending.get(id);
      if (p) p.n++;
      else {
        if (pending.size === 0) setImmediate(write);
        pending.set(id, { subject, day, n: 1 });
      }
    },
  };
}

/**
 * One lookup shared by every request that asks for `id` in this turn of the event loop: the
 * entry is dropped at the end of the turn, when the store sends, so the read still follows every
 * request that joined it (a plan change or revocation made before a request was sent is seen).
 */
function sharedThisTurn<V>(lookups: Map<string, Promise<V>>, id: string, load: () => Promise<V>): Promise<V> {
  let p = lookups.get(id);
  if (p === undefined) {
    p = load();
    lookups.set(id, p);
    setImmediate(() => lookups.delete(id));
  }
  return p;
}

/** Local transports (stdio, in-memory) are trusted launches: never limited. */
export function isLimitedTransport(caller: Pick<Caller, 'transport'>): boolean {
  return caller.transport === 'rest' || caller.transport === 'mcp-http';
}

const REALM = 'Bearer realm="devtoolbox"';

/** 401 for a request that presents a key that is malformed or unknown. */
export function invalidKey(message: string): ToolError {
  return new ToolError('UNAUTHORIZED', message, undefined, { 'WWW-Authenticate': `${REALM}, error="invalid_token"` });
}

/** 401 for an endpoint that needs a key when none was presented. */
export function keyRequired(message: string): ToolError {
  return new ToolError('UNAUTHORIZED', message, undefined, { 'WWW-Authenticate': REALM });
}

/** What a transport read from a request about who is calling. */
export interface Credentials {
  /** The peer address (socket) or the transport's name for local transports. */
  peer: string;
  /** The X-Forwarded-For header, trusted only from TRUSTED_PROXIES. */
  forwardedFor?: string | undefined;
  /** The Authorization header, when present. */
  authorization?: string | undefined;
  /** Keys from `?api_key=`, and from the body field the tool declares. */
  keys?: readonly string[];
  /**
   * The request is a tool call whose limits are checked (`admit`) before anything of it runs:
   * with a shared limiter its key may come from the key cache, confirmed by that check.
   * `'if-cached'` (MCP over HTTP, whose request may or may not be a call: its body is read
   * after the key): a key in the cache gives its cached caller (`fromKeyCache`), which the
   * transport looks up again (`resolve` without `admitted`) unless the request turns out to be
   * a call; a key not in the cache is looked up as without `admitted`, and once found the
   * cache is filled in the background, for the calls that follow.
   */
  admitted?: boolean | 'if-cached';
}

/** Re-reads of a changed key record within one call before it is checked without a generation. */
const STALE_RETRIES = 2;

/** What a shared check's `then` gives: the headers, or (after a stale answer) the re-check's promise. */
type Admitted = Record<string, string> | Promise<Record<string, string> | undefined>;

/** The cached key a caller was resolved from, carried on the caller to its `admit`. */
const CACHED_KEY = Symbol('cached key');
/** A cached caller's limit check found its key gone (the 401 a lookup would have given). */
const KEY_GONE = Symbol('key gone');
type CachedCaller = Caller & { [CACHED_KEY]?: CachedKey; [KEY_GONE]?: ToolError };

/** Whether `caller` came from the key cache (its record is confirmed only by a limit check). */
export function fromKeyCache(caller: Caller): boolean {
  return (caller as CachedCaller)[CACHED_KEY] !== undefined;
}

/**
 * The 401 of a cached caller whose key turned out to be gone during its call (#stale), if so:
 * a transport that turns a call's errors into results (MCP) answers it as the 401 of an unknown
 * key at the door instead, so a client still learns to sign in again.
 */
export function keyGone(caller: Caller): ToolError | undefined {
  return (caller as CachedCaller)[KEY_GONE];
}

/** A daily quota counted from stored records (e.g. short links per UTC day). */
export interface DailyQuota {
  /** The plan limit's name, e.g. `short_links_per_day`. */
  limit: 'short_links_per_day';
  /** For the message "<what> reached: 100 <unit> per UTC day …": e.g. `Short-link quota`, `links`. */
  what: string;
  unit: string;
}

/**
 * Keys, plans and limits of one running service: `services.auth`. The transports call
 * `resolve()` (who is calling); the one call path calls `admit()` (the limits); tools read plans
 * and usage through it.
 */
export class Auth {
  /**
   * The request limiter: in this process (embedded stores: one process owns the data), or in
   * the shared backend (Redis: every instance counts against the same windows).
   */
  readonly limiter: Limiter | SharedLimiter;
  readonly register: SlidingCounter | SharedSlidingCounter;
  readonly trusted: TrustedProxies;
  /**
   * Resolves a bearer value that is not an API key (an OAuth access token) to its key, or throws
   * a 401; set where sign-in is served (src/auth/oauth/). Unset: every bearer value is a key.
   */
  tokens: ((token: string) => Promise<ApiKeyRecord>) | undefined;
  /** Plans of the keys seen by resolveCaller (plans change only through the CLI, offline). */
  readonly #plans = new Map<string, PlanName>();

  constructor(readonly services: AuthDeps) {
    this.trusted = new TrustedProxies(services.config.trustedProxies);
    const shared = services.store.windows;
    this.limiter = shared
      ? new SharedLimiter(shared)
      : new Limiter(services.clock, storeDailyCounts(services), (err) => services.log.warn('rate limits: could not read a day count', err));
    this.register = shared
      ? new SharedSlidingCounter(shared, REGISTER_LIMIT.limit, REGISTER_LIMIT.windowMs)
      : new SlidingCounter(services.clock, REGISTER_LIMIT.limit, REGISTER_LIMIT.windowMs);
    this.keys = new KeyCache(services.store);
  }

  get enabled(): boolean {
    return this.services.config.rateLimits;
  }

  /** Limit addresses of recent peers (parsing an address is measurable on every call). */
  readonly #peerAddresses = new Map<string, string>();

  #peerAddress(peer: string): string {
    let a = this.#peerAddresses.get(peer);
    if (a === undefined) {
      if (this.#peerAddresses.size >= 10_000) this.#peerAddresses.clear();
      this.#peerAddresses.set(peer, (a = limitAddress(clientAddress(peer, undefined, this.trusted))));
    }
    return a;
  }

  /** Hashed addresses of recent keyless callers (hashing is most of a keyless call's auth cost). */
  readonly #ipSubjects = new Map<string, string>();

  /** The limiter's subject: the key id, or the (hashed) client address for keyless calls. */
  subject(caller: Pick<Caller, 'keyId' | 'ip'>): string {
    if (caller.keyId !== null) return ownerKey(caller);
    let s = this.#ipSubjects.get(caller.ip);
    if (s === undefined) {
      if (this.#ipSubjects.size >= 10_000) this.#ipSubjects.clear();
      this.#ipSubjects.set(caller.ip, (s = ownerKey(caller)));
    }
    return s;
  }

  /** A plan changed (the admin route): applies to the key's next call. */
  planChanged(keyId: string, plan: PlanName): void {
    this.#plans.set(keyId, plan);
  }

  planOf(caller: Pick<Caller, 'keyId'>): PlanName | 'keyless' {
    if (caller.keyId === null) return 'keyless';
    return this.#plans.get(caller.keyId) ?? 'free';
  }

  limitsOf(caller: Pick<Caller, 'keyId'>): PlanLimits {
    return this.services.config.plans[this.planOf(caller)];
  }

  /** The key record behind a caller, read from the store (undefined for keyless callers). */
  async record(caller: Pick<Caller, 'keyId'>): Promise<ApiKeyRecord | undefined> {
    if (caller.keyId === null) return undefined;
    const rec = await findApiKeyById(this.services.store, caller.keyId);
    if (rec) this.#plans.set(rec.key_id, rec.plan);
    return rec;
  }

  /**
   * Works out who is calling: the client address (X-Forwarded-For only from a trusted proxy;
   * IPv4-mapped unwrapped, IPv6 by /64) and the API key, from `Authorization: Bearer`,
   * `?api_key=`, or a body field the tool declares. Every key presented must be the same known
   * key: anything else is 401, never a quiet fall-back to keyless. A key of a call that will be
   * admitted (`cred.admitted`) may come from the key cache on a shared limiter (#filledCaller).
   */
  resolve(cred: Credentials, transport: Caller['transport']): Caller | Promise<Caller> {
    const ip = cred.forwardedFor === undefined ? this.#peerAddress(cred.peer) : limitAddress(clientAddress(cred.peer, cred.forwardedFor, this.trusted));
    const presented: string[] = [];
    if (cred.authorization !== undefined) {
      const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(cred.authorization);
      if (!m) throw invalidKey('The Authorization header must be "Bearer <api key>"');
      const value = m[1]!;
      // An access token acts for its key: the key's id, plan and limits, as if the key were sent.
      if (this.tokens && !value.startsWith(KEY_PREFIX) && !cred.keys?.length) {
        return this.#findToken(value, this.tokens).then((rec) => {
          this.#plans.set(rec.key_id, rec.plan);
          return this.#prepared({ keyId: rec.key_id, ip, transport });
        });
      }
      presented.push(value);
    }
    if (cred.keys) presented.push(...cred.keys);
    // Keyless: answered synchronously (no promise hop on the common path, issue 21).
    if (presented.length === 0) return this.#prepared({ keyId: null, ip, transport });
    const key = presented[0]!;
    if (presented.some((k) => k !== key)) throw invalidKey('Different API keys were presented in one request');
    if (!(this.limiter instanceof SharedLimiter)) return this.#localCaller(key, ip, transport);
    // 'if-cached' and not cached: the hash of a key to fill the cache with once it is found.
    let fillLater: string | undefined;
    if (cred.admitted && this.enabled && isLimitedTransport({ transport })) {
      const hash = this.#hashOf(key);
      const hit = this.keys.get(hash);
      if (hit !== undefined) return this.#callerFrom(hit, ip, transport);
      if (cred.admitted === true) return this.#filledCaller(hash, ip, transport);
      fillLater = hash;
    }
    return this.#findKey(key).then((rec) => {
      if (!rec) throw invalidKey('Unknown API key');
      // A known key the cache lacks ('if-cached'): kept for the next calls (one more lookup, once).
      if (fillLater !== undefined) void this.keys.fill(fillLater, (this.limiter as SharedLimiter).windows).catch(() => {});
      this.#plans.set(rec.key_id, rec.plan);
      return this.#prepared({ keyId: rec.key_id, ip, transport });
    });
  }

  /** Key lookups not yet sent to the store, by presented key (issue 37). */
  readonly #lookups = new Map<string, Promise<ApiKeyRecord | undefined>>();

  /**
   * The record of a presented key. Requests with the same key read in one turn of the event loop
   * share one lookup (one hash, one store round trip). A request joins only until the lookup is
   * sent (the store sends at the end of the turn, before this deletion runs): one read after
   * the request arrived, so a plan changed before it was sent is seen.
   */
  #findKey(key: string): Promise<ApiKeyRecord | undefined> {
    return sharedThisTurn(this.#lookups, key, () => findApiKey(this.services.store, key));
  }

  /** Key records kept across calls, each used only while its generation is current (issue 37). */
  readonly keys: KeyCache;

  /** The hash of a presented key; 401 for a malformed one (never looked up). */
  #hashOf(key: string): string {
    const hash = this.keys.hashOf(key);
    if (hash === undefined) throw invalidKey('Unknown API key');
    return hash;
  }

  /**
   * The caller of a key the cache lacks, read into the cache (issue 37). A cached caller costs
   * no store round trip; its `admit` runs the limit script with the cached generation, which
   * consumes nothing and answers "stale" if the record changed since (then #stale re-reads it).
   * Unknown and malformed keys are never cached: each costs one lookup, as without the cache.
   */
  #filledCaller(hash: string, ip: string, transport: Caller['transport']): Promise<Caller> {
    return this.keys.fill(hash, (this.limiter as SharedLimiter).windows).then((c) => {
      if (!c) throw invalidKey('Unknown API key');
      return this.#callerFrom(c, ip, transport);
    });
  }

  #callerFrom(c: CachedKey, ip: string, transport: Caller['transport']): Caller {
    this.#plans.set(c.rec.key_id, c.rec.plan);
    const caller: CachedCaller = { keyId: c.rec.key_id, ip, transport };
    caller[CACHED_KEY] = c;
    return caller;
  }

  /**
   * The caller of a key on an embedded store (issue 37): one process owns the data, every write
   * of a key record bumps the store's one key generation (keysChanged), and a cached record is
   * used only while that generation is the one it was read under — checked here, at once, so
   * the caller is answered synchronously and is exact for any route. The generation is read
   * before the lookup: a record cached under it can only be older than it, never newer.
   */
  #localCaller(key: string, ip: string, transport: Caller['transport']): Caller | Promise<Caller> {
    const hash = this.#hashOf(key);
    const gen = String(localKeyGeneration(this.services.store));
    const hit = this.keys.get(hash);
    if (hit !== undefined && hit.gen === gen) {
      this.#plans.set(hit.rec.key_id, hit.rec.plan);
      return this.#prepared({ keyId: hit.rec.key_id, ip, transport });
    }
    return findApiKeyByHash(this.services.store, hash).then((rec) => {
      if (!rec) throw invalidKey('Unknown API key');
      this.keys.remember({ hash, rec, gen });
      this.#plans.set(rec.key_id, rec.plan);
      return this.#prepared({ keyId: rec.key_id, ip, transport });
    });
  }

  /**
   * The limit check answered that the caller's cached record changed (its generation is now
   * `current`, read by the script): the record is read again — after the script, so the pair is
   * safe to cache — and the call checked again under it, consuming nothing until then. A key
   * that is gone is a 401, as it would have been on the lookup.
   */
  #stale(limiter: SharedLimiter, caller: CachedCaller, was: CachedKey, current: string, tool: MeteredTool, tries: number): Promise<Record<string, string> | undefined> {
    this.keys.forget(was);
    return findApiKeyByHash(this.services.store, was.hash).then((rec) => {
      if (!rec) throw (caller[KEY_GONE] = invalidKey('Unknown API key'));
      // The same key id: `current` is its generation. Another (an import moved the key): checked
      // without one this time, and cached again by the next call's lookup.
      const c = this.keys.remember({ hash: was.hash, rec, gen: rec.key_id === was.rec.key_id ? current : undefined });
      caller.keyId = rec.key_id;
      caller[CACHED_KEY] = c;
      this.#plans.set(rec.key_id, rec.plan);
      return this.#admitShared(limiter, caller, rec.plan, tool, tries + 1);
    });
  }

  /** Token lookups not yet sent to the store, by presented token (as #lookups for keys). */
  readonly #tokenLookups = new Map<string, Promise<ApiKeyRecord>>();

  /**
   * The key record an access token acts for, shared by the requests with the same token read in
   * one turn, on the same terms as #findKey (a token revoked before a request was sent is refused).
   */
  #findToken(token: string, lookup: (token: string) => Promise<ApiKeyRecord>): Promise<ApiKeyRecord> {
    return sharedThisTurn(this.#tokenLookups, token, () => lookup(token));
  }

  /** The caller once its limiter entry is read (a shared limiter may have to load it). */
  #prepared(caller: Caller): Caller | Promise<Caller> {
    if (!this.enabled || !isLimitedTransport(caller)) return caller;
    const loading = this.limiter.prepare(this.subject(caller));
    return loading ? loading.then(() => caller) : caller;
  }

  /**
   * The limits of one tool call (REST, MCP over HTTP): one unit of the caller's minute and day
   * budgets, or RATE_LIMITED with the retry time. Headers for the response either way (undefined
   * when nothing is limited). A `free` tool only reports on the budget: asking "how much is
   * left?" costs nothing (and still works when nothing is left).
   */
  admit(caller: Caller, tool: MeteredTool): Record<string, string> | undefined | Promise<Record<string, string> | undefined> {
    if (!this.enabled || !isLimitedTransport(caller)) return undefined;
    const plan = this.planOf(caller);
    const limiter = this.limiter;
    // Shared (Redis): one atomic script per check, asynchronous.
    if (!(limiter instanceof Limiter)) return this.#admitShared(limiter, caller, plan, tool, 0);
    if (tool.metering === 'free') return rateLimitHeaders(limiter.peek(this.subject(caller), this.services.config.plans[plan]));
    const d = limiter.take(this.subject(caller), this.services.config.plans[plan]);
    const headers = rateLimitHeaders(d);
    if (!d.allowed) throw rateLimited(d, plan, headers);
    return headers;
  }

  #admitShared(limiter: SharedLimiter, caller: CachedCaller, plan: PlanName | 'keyless', tool: MeteredTool, tries: number): Promise<Record<string, string> | undefined> {
    const subject = this.subject(caller);
    const limits: WindowLimits = this.services.config.plans[plan];
    const c = caller[CACHED_KEY];
    // A record from the key cache is checked under its generation (one script call, as uncached).
    // A stale answer resolves the call's promise with the re-checked call's (adopted once).
    const cached: CachedGeneration<Admitted> | undefined =
      c?.gen === undefined || tries > STALE_RETRIES ? undefined : { gen: c.gen, stale: (current) => this.#stale(limiter, caller, c, current, tool, tries) };
    // `then` inside the windows' promise, not async/await: one promise per call less on the hot path (issue 37).
    if (tool.metering === 'free') return limiter.peek<Admitted>(subject, limits, rateLimitHeaders, cached) as Promise<Record<string, string>>;
    return limiter.take<Admitted>(
      subject,
      limits,
      (d) => {
        const headers = rateLimitHeaders(d);
        if (!d.allowed) throw rateLimited(d, plan, headers);
        return headers;
      },
      cached,
    ) as Promise<Record<string, string>>;
  }

  /**
   * The cheap check before a request body is read or parsed: a caller whose budget is already
   * spent is refused now (consuming nothing), so a 10 MiB body over quota costs no parsing.
   * The call is still admitted (and counted) by `admit` once its input is read.
   */
  refuseEarly(caller: Caller, tool: MeteredTool): void {
    // With a shared limiter the check would cost a round trip per call: admit() decides alone.
    if (!this.enabled || !isLimitedTransport(caller) || tool.metering === 'free' || !(this.limiter instanceof Limiter)) return;
    const plan = this.planOf(caller);
    const d = this.limiter.peek(this.subject(caller), this.services.config.plans[plan]);
    if (!d.allowed) throw rateLimited(d, plan, rateLimitHeaders(d));
  }

  /** Current usage of a caller's budgets, consuming nothing. */
  async usage(caller: Caller): Promise<Decision> {
    const subject = this.subject(caller);
    await this.limiter.prepare(subject);
    return this.limiter.peek(subject, this.limitsOf(caller));
  }

  /**
   * The cap of a daily quota (e.g. short links per UTC day) for this caller, or undefined when
   * nothing is limited (RATE_LIMITS=off, local transports). The tool enforces it atomically with
   * `Collection.insertCapped` on the index that counts the owner's day (exact across processes
   * on a shared backend), and answers a full cap with `quotaExceeded`.
   */
  async dailyCap(caller: Caller, limit: DailyQuota['limit']): Promise<number | undefined> {
    if (!this.enabled || !isLimitedTransport(caller)) return undefined;
    if (caller.keyId !== null && !this.#plans.has(caller.keyId)) await this.record(caller);
    return this.limitsOf(caller)[limit];
  }

  /** 429 for a full daily quota: retry after the next 00:00 UTC. */
  quotaExceeded(caller: Caller, quota: Pick<DailyQuota, 'limit' | 'what' | 'unit'>, now: number, max: number): ToolError {
    const retryAt = nextUtcMidnight(now);
    const retry = Math.max(1, Math.ceil((retryAt - now) / 1000));
    return new ToolError(
      'RATE_LIMITED',
      `${quota.what} reached: ${max} ${quota.unit} per UTC day on the ${this.planOf(caller)} plan; retry after ${new Date(retryAt).toISOString()}`,
      { limit: quota.limit, quota: max, used: max, retry_after: retry, retry_at: new Date(retryAt).toISOString() },
      { 'Retry-After': String(retry) },
    );
  }
}

function rateLimited(d: Decision, plan: PlanName | 'keyless', headers: Record<string, string>): ToolError {
  const w = d.refusedBy === 'day' ? d.day : d.minute;
  const retryAt = d.retryAt ?? w.resetAt;
  const retry = Math.max(1, Math.ceil((retryAt - d.now) / 1000));
  const who = plan === 'keyless' ? 'keyless calls (per client address)' : `the ${plan} plan`;
  return new ToolError(
    'RATE_LIMITED',
    `Rate limit exceeded: ${w.limit} calls per ${w.name === 'day' ? 'UTC day' : 'minute'} for ${who}; retry after ${retry} s (${new Date(retryAt).toISOString()})`,
    { window: w.name, limit: w.limit, remaining: 0, retry_after: retry, retry_at: new Date(retryAt).toISOString() },
    headers,
  );
}
