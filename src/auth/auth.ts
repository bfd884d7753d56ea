import type { Context } from 'hono';
import { ToolError } from '../errors.js';
import type { AnyTool, Caller } from '../registry.js';
import type { Services } from '../services.js';
import { defineCollection } from '../state/index.js';
import { countLinksCreatedToday, linkOwnerKey } from '../tools/shortener/links.js';
import { clientAddress, limitAddress, TrustedProxies } from './ip.js';
import { findApiKey, findApiKeyById, type ApiKeyRecord } from './keys.js';
import { Limiter, nextUtcMidnight, rateLimitHeaders, SlidingCounter, type DailyCounts, type Decision } from './limiter.js';
import { PLANS, REGISTER_LIMIT, type PlanLimits, type PlanName } from './plans.js';

/** One persisted day count of the limiter: calls of `subject` on UTC `day`. */
export interface RateDayRecord {
  id: string;
  subject: string;
  day: string;
  count: number;
}

export const RATE_DAYS = defineCollection<RateDayRecord>({ name: 'rate_days', key: 'id', indexes: ['day'], segmentSize: 1000 });

/**
 * Day counts in the store. Written lazily (on disk within LAZY_FLUSH_MS): a crash loses at
 * most that much of counting, which only ever errs in the caller's favour. Records of past days
 * are deleted the first time a new day is seen.
 */
export function storeDailyCounts(services: Services): DailyCounts {
  const coll = services.store.collection(RATE_DAYS);
  let prunedBefore = '';
  return {
    async load(subject, day) {
      if (prunedBefore !== day) {
        prunedBefore = day;
        void coll
          .query({ index: 'day', lt: day })
          .then((old) => Promise.all(old.map((r) => coll.delete(r.id, { durability: 'lazy' }))))
          .catch((err: unknown) => services.log.warn('rate limits: could not delete old day counts', err));
      }
      return (await coll.get(`${subject}|${day}`))?.count ?? 0;
    },
    add(subject, day) {
      const id = `${subject}|${day}`;
      coll.increment(id, 'count', 1, { init: { id, subject, day, count: 0 }, durability: 'lazy' }).catch((err: unknown) => {
        services.log.warn('rate limits: could not record a call', err);
      });
    },
  };
}

/** Local transports (stdio, in-memory) are trusted launches: never limited. */
export function isLimitedTransport(caller: Caller): boolean {
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

/**
 * Keys, plans and limits of one running service (one per Services object, see authFor()).
 * The transports reach it through AppOptions.resolveCaller / guard; the auth_info tool through
 * authFor(ctx.services).
 */
export class Auth {
  readonly limiter: Limiter;
  readonly register: SlidingCounter;
  readonly trusted: TrustedProxies;
  /** Plans of the keys seen by resolveCaller (plans change only through the CLI, offline). */
  readonly #plans = new Map<string, PlanName>();
  /** Per-owner chains that make "count today's links, then create one" atomic. */
  readonly #linkLocks = new Map<string, Promise<unknown>>();

  constructor(readonly services: Services) {
    this.trusted = new TrustedProxies(services.config.trustedProxies);
    this.limiter = new Limiter(services.clock, storeDailyCounts(services), (err) => services.log.warn('rate limits: could not read a day count', err));
    this.register = new SlidingCounter(services.clock, REGISTER_LIMIT.limit, REGISTER_LIMIT.windowMs);
  }

  get enabled(): boolean {
    return this.services.config.rateLimits;
  }

  /** Hashed addresses of recent keyless callers (hashing is most of a keyless call's auth cost). */
  readonly #ipSubjects = new Map<string, string>();

  /** The limiter's subject: the key id, or the (hashed) client address for keyless calls. */
  subject(caller: Pick<Caller, 'keyId' | 'ip'>): string {
    if (caller.keyId !== null) return linkOwnerKey(caller);
    let s = this.#ipSubjects.get(caller.ip);
    if (s === undefined) {
      if (this.#ipSubjects.size >= 10_000) this.#ipSubjects.clear();
      this.#ipSubjects.set(caller.ip, (s = linkOwnerKey(caller)));
    }
    return s;
  }

  planOf(caller: Pick<Caller, 'keyId'>): PlanName | 'keyless' {
    if (caller.keyId === null) return 'keyless';
    return this.#plans.get(caller.keyId) ?? 'free';
  }

  limitsOf(caller: Pick<Caller, 'keyId'>): PlanLimits {
    return PLANS[this.planOf(caller)];
  }

  /** The key record behind a caller, read from the store (undefined for keyless callers). */
  async record(caller: Pick<Caller, 'keyId'>): Promise<ApiKeyRecord | undefined> {
    if (caller.keyId === null) return undefined;
    const rec = await findApiKeyById(this.services.store, caller.keyId);
    if (rec) this.#plans.set(rec.key_id, rec.plan);
    return rec;
  }

  /**
   * Works out who is calling over HTTP: the client address (X-Forwarded-For only from a
   * trusted proxy; IPv4-mapped unwrapped, IPv6 by /64) and the API key, from
   * `Authorization: Bearer`, `?api_key=`, or a body field the tool declares. Every key presented
   * must be the same known key: anything else is 401, never a quiet fall-back to keyless.
   */
  async resolveCaller(c: Context, base: Caller, bodyKey?: string): Promise<Caller> {
    const ip = limitAddress(clientAddress(base.ip, c.req.header('x-forwarded-for'), this.trusted));
    const presented: string[] = [];
    const authz = c.req.header('authorization');
    if (authz !== undefined) {
      const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authz);
      if (!m) throw invalidKey('The Authorization header must be "Bearer <api key>"');
      presented.push(m[1]!);
    }
    presented.push(...(c.req.queries('api_key') ?? []));
    if (bodyKey !== undefined) presented.push(bodyKey);
    let caller: Caller;
    if (presented.length === 0) caller = { ...base, ip, keyId: null };
    else {
      const key = presented[0]!;
      if (presented.some((k) => k !== key)) throw invalidKey('Different API keys were presented in one request');
      const rec = await findApiKey(this.services.store, key);
      if (!rec) throw invalidKey('Unknown API key');
      this.#plans.set(rec.key_id, rec.plan);
      caller = { ...base, ip, keyId: rec.key_id };
    }
    if (this.enabled && isLimitedTransport(caller)) await this.limiter.prepare(this.subject(caller));
    return caller;
  }

  /**
   * The call guard of REST tool calls and MCP tools/call over HTTP: one unit of the caller's
   * minute and day budgets, or RATE_LIMITED with the retry time. Headers for the response either way.
   * The auth tools only report on the budget: asking "how much is left?" costs nothing (and
   * still works when nothing is left).
   */
  readonly guard = (caller: Caller, tool: AnyTool): { headers: Record<string, string> } | void => {
    if (!this.enabled || !isLimitedTransport(caller)) return;
    const plan = this.planOf(caller);
    if (tool.group === 'auth') return { headers: rateLimitHeaders(this.limiter.peek(this.subject(caller), PLANS[plan])) };
    const d = this.limiter.take(this.subject(caller), PLANS[plan]);
    const headers = rateLimitHeaders(d);
    if (!d.allowed) throw rateLimited(d, plan, headers);
    return { headers };
  };

  /** Current usage of a caller's budgets, consuming nothing. */
  async usage(caller: Caller): Promise<Decision> {
    const subject = this.subject(caller);
    await this.limiter.prepare(subject);
    return this.limiter.peek(subject, this.limitsOf(caller));
  }

  /**
   * Runs `create` (which stores one short link) only while the caller's links of today are
   * under the plan's quota for the UTC day of `now` (the day the link is filed under). Counted
   * from the stored links, so exact and restart-proof; calls of one owner are serialised so that
   * simultaneous ones cannot overshoot.
   */
  async withShortLinkQuota<T>(caller: Caller, now: number, create: () => Promise<T>): Promise<T> {
    if (!this.enabled || !isLimitedTransport(caller)) return create();
    const owner = linkOwnerKey(caller);
    if (caller.keyId !== null && !this.#plans.has(caller.keyId)) await this.record(caller);
    const quota = this.limitsOf(caller).short_links_per_day;
    const prev = this.#linkLocks.get(owner) ?? Promise.resolve();
    const run = prev.then(async () => {
      const made = await countLinksCreatedToday(this.services.store, owner, now);
      if (made >= quota) {
        const retryAt = nextUtcMidnight(now);
        const retry = Math.max(1, Math.ceil((retryAt - now) / 1000));
        throw new ToolError(
          'RATE_LIMITED',
          `Short-link quota reached: ${quota} links per UTC day on the ${this.planOf(caller)} plan; retry after ${new Date(retryAt).toISOString()}`,
          { limit: 'short_links_per_day', quota, used: made, retry_after: retry, retry_at: new Date(retryAt).toISOString() },
          { 'Retry-After': String(retry) },
        );
      }
      return create();
    });
    const settled = run.catch(() => {});
    this.#linkLocks.set(owner, settled);
    void settled.then(() => {
      if (this.#linkLocks.get(owner) === settled) this.#linkLocks.delete(owner);
    });
    return run;
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

const instances = new WeakMap<Services, Auth>();

/** The Auth of a running service (created on first use, one per Services). */
export function authFor(services: Services): Auth {
  let a = instances.get(services);
  if (!a) instances.set(services, (a = new Auth(services)));
  return a;
}

