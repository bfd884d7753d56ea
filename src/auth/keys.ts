import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { defineCollection, type Store } from '../state/index.js';
import { ownerKey } from './owner.js';
import type { PlanName } from './plans.js';

/**
 * An API key as stored. The raw key is never stored: only its SHA-256 (hex), which is what a
 * presented key is looked up by. `key_id` is the public identity the rest of the service sees
 * (ownership of links and tasks, limiter subjects); it is random, not derived from the key.
 */
export interface ApiKeyRecord {
  email: string;
  key_hash: string;
  key_id: string;
  key_prefix: string;
  plan: PlanName;
  created_at: string;
}

/** Keyed by e-mail, so "one key per address" is an atomic insert; indexed for lookups by hash and id. */
export const API_KEYS = defineCollection<ApiKeyRecord>({ name: 'api_keys', key: 'email', indexes: ['key_hash', 'key_id'] });

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const KEY_PREFIX = 'dtb_';
export const KEY_BODY_LENGTH = 32;
export const KEY_PATTERN = /^dtb_[A-Za-z0-9]{32}$/;
/** Characters of the key body shown in key_prefix (`dtb_` + 4): enough to tell keys apart, useless to guess. */
const DISPLAY_CHARS = 4;

function base62(n: number): string {
  let out = '';
  while (out.length < n) {
    for (const b of randomBytes(n + 8)) {
      // 248 = 4 × 62: rejecting the bytes above keeps every character equally likely.
      if (b < 248 && out.length < n) out += BASE62[b % 62];
    }
  }
  return out;
}

/** A fresh key: `dtb_` + 32 base62 characters from the CSPRNG (≈190 bits). */
export function generateApiKey(): string {
  return KEY_PREFIX + base62(KEY_BODY_LENGTH);
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function displayPrefix(key: string): string {
  return key.slice(0, KEY_PREFIX.length + DISPLAY_CHARS);
}

/** Longest address of RFC 5321 (254 octets in a path). */
export const MAX_EMAIL_LENGTH = 254;
// A pragmatic address check: one @, a dot-atom-ish local part, a domain of labels with a dot.
const EMAIL = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;

/**
 * An e-mail address as input, and as stored and compared: trimmed and lower-cased (mail providers
 * treat the local part case-insensitively in practice, and two keys for Dev@x and dev@x would
 * surprise). The first failed check is the only issue.
 */
export const Email = z
  .string({ error: (iss) => (iss.input === undefined ? 'is required' : 'must be a string') })
  .trim()
  .toLowerCase()
  .min(1, { error: 'is required', abort: true })
  .max(MAX_EMAIL_LENGTH, { error: `must be at most ${MAX_EMAIL_LENGTH} characters`, abort: true })
  .refine((e) => EMAIL.test(e) && !e.includes('..') && !e.startsWith('.') && !e.includes('.@'), { error: 'is not a valid e-mail address' })
  .describe('Your e-mail address');

/** `Email` outside a zod object (the CLI): throws INVALID_INPUT with the field in details. */
export function normaliseEmail(raw: unknown): string {
  const r = Email.safeParse(raw);
  if (r.success) return r.data;
  const message = r.error.issues[0]?.message ?? 'is not a valid e-mail address';
  throw new ToolError('INVALID_INPUT', `Invalid input: email ${message}`, [{ path: 'email', message }]);
}

export interface NewKey {
  api_key: string;
  record: ApiKeyRecord;
}

/** Creates a free key for an address (durable before it resolves). Throws CONFLICT when taken. */
export async function createApiKey(store: Store, email: string, now: number): Promise<NewKey> {
  const api_key = generateApiKey();
  const record: ApiKeyRecord = {
    email,
    key_hash: hashApiKey(api_key),
    key_id: `k_${base62(16)}`,
    key_prefix: displayPrefix(api_key),
    plan: 'free',
    created_at: new Date(now).toISOString(),
  };
  if (!(await store.collection(API_KEYS).insert(record, { durability: 'replicated' }))) {
    throw new ToolError('CONFLICT', 'An API key is already registered for this e-mail address', { email });
  }
  await keysChanged(store, [record.key_id]);
  return { api_key, record };
}

/** The key-record generation of each embedded store (one process owns its data): see keysChanged. */
const localGenerations = new WeakMap<Store, number>();

/** The generation of every key record of an embedded store, bumped by keysChanged (issue 37). */
export function localKeyGeneration(store: Store): number {
  return localGenerations.get(store) ?? 0;
}

/**
 * After a write of key records: bumps each key's generation in the shared backend, so that a
 * record cached by any instance is no longer used by its next limited call (src/auth/auth.ts,
 * issue 37). Every writer of API_KEYS calls it once its write is done. On an embedded store (one
 * process owns the data dir, so every write is this process's) one generation covers all keys.
 */
export async function keysChanged(store: Store, keyIds: Iterable<string>): Promise<void> {
  if (!store.windows) {
    localGenerations.set(store, localKeyGeneration(store) + 1);
    return;
  }
  const subjects = [...new Set(keyIds)].map((keyId) => ownerKey({ keyId, ip: '' }));
  if (subjects.length > 0) await store.windows.bump(subjects);
}

/** The record of a presented key, or undefined. Malformed keys are not looked up. */
export async function findApiKey(store: Store, key: string): Promise<ApiKeyRecord | undefined> {
  if (!KEY_PATTERN.test(key)) return undefined;
  return findApiKeyByHash(store, hashApiKey(key));
}

/** The record whose key hashes to `hash` (hex SHA-256), or undefined. */
export async function findApiKeyByHash(store: Store, hash: string): Promise<ApiKeyRecord | undefined> {
  const [rec] = await store.collection(API_KEYS).query({ index: 'key_hash', eq: hash, limit: 1 });
  // The index lookup compared hashes already; compare again in constant time for good measure.
  if (!rec || !timingSafeEqual(Buffer.from(rec.key_hash, 'hex'), Buffer.from(hash, 'hex'))) return undefined;
  return rec;
}

export async function findApiKeyById(store: Store, keyId: string): Promise<ApiKeyRecord | undefined> {
  const [rec] = await store.collection(API_KEYS).query({ index: 'key_id', eq: keyId, limit: 1 });
  return rec;
}

/** Sets the plan of the key of an address; resolves with the record, or undefined when none. */
export async function setPlan(store: Store, email: string, plan: PlanName): Promise<ApiKeyRecord | undefined> {
  const rec = await store.collection(API_KEYS).update(email, (cur) => (cur ? { ...cur, plan } : undefined));
  if (rec) await keysChanged(store, [rec.key_id]);
  return rec;
}

/** Every key, oldest first (for `devtoolbox keys list`). */
export async function listApiKeys(store: Store): Promise<ApiKeyRecord[]> {
  const all = await store.collection(API_KEYS).query();
  return all.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.email.localeCompare(b.email));
}

