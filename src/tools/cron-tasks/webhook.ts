/**
 * Signed webhooks, Standard Webhooks scheme (https://www.standardwebhooks.com): headers
 * `webhook-id`, `webhook-timestamp` (unix seconds) and `webhook-signature: v1,<base64 HMAC-SHA256
 * of "{id}.{timestamp}.{body}">`, keyed by the base64 part of the task's `whsec_…` secret.
 */
import { createHmac } from 'node:crypto';
import { ToolError } from '../../errors.js';
import type { Fetcher } from '../../net/fetch.js';

export const MAX_ATTEMPTS = 5;
export const DELIVERY_TIMEOUT_MS = 10_000;
/**
 * Of a receiver's answer body, at most this much is read; the rest is dropped unread (the
 * connection is closed). Its size never decides the outcome: only the status does.
 */
export const MAX_RESPONSE_BYTES = 4 * 1024;

export interface DuePayload {
  type: 'cron_task.due';
  timestamp: string;
  /** schedule is null for a one-shot task. */
  data: { task_id: string; agent_id: string; name: string; schedule: string | null; scheduled_for: string };
}

export function dueBody(task: { task_id: string; agent_id: string; name: string; schedule: string | null }, scheduledFor: string, now: number): string {
  const payload: DuePayload = {
    type: 'cron_task.due',
    timestamp: new Date(now).toISOString(),
    data: { task_id: task.task_id, agent_id: task.agent_id, name: task.name, schedule: task.schedule, scheduled_for: scheduledFor },
  };
  return JSON.stringify(payload);
}

/** The `cron_task.late` message: the occurrence nobody claimed or reported within grace_seconds. */
export interface LatePayload {
  type: 'cron_task.late';
  timestamp: string;
  data: { task_id: string; agent_id: string; name: string; schedule: string | null; scheduled_for: string; grace_seconds: number; late_since: string };
}

export function lateBody(
  task: { task_id: string; agent_id: string; name: string; schedule: string | null; grace_seconds?: number | null | undefined },
  scheduledFor: string,
  since: number,
  now: number,
): string {
  const payload: LatePayload = {
    type: 'cron_task.late',
    timestamp: new Date(now).toISOString(),
    data: {
      task_id: task.task_id,
      agent_id: task.agent_id,
      name: task.name,
      schedule: task.schedule,
      scheduled_for: scheduledFor,
      grace_seconds: task.grace_seconds ?? 0,
      late_since: new Date(since).toISOString(),
    },
  };
  return JSON.stringify(payload);
}

export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

export function webhookHeaders(secret: string, id: string, now: number, body: string): Record<string, string> {
  const ts = Math.floor(now / 1000);
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(ts),
    'webhook-signature': signature(secret, id, ts, body),
  };
}

/**
 * Delay before attempt n+1 after n failed attempts: 2 s · 3^(n-1) (2, 6, 18, 54 s) with
 * "equal jitter" (half fixed, half random) so that receivers that failed together do not get
 * their retries together.
 */
export function defaultBackoff(attempt: number, random: () => number = Math.random): number {
  const base = 2000 * 3 ** Math.max(0, attempt - 1);
  return Math.round(base / 2 + (random() * base) / 2);
}

export interface AttemptOutcome {
  ok: boolean;
  /** Network errors, timeouts, a full fetch budget, 408, 429 and 5xx are worth another attempt; nothing else is. */
  retryable: boolean;
  status: number | null;
  message: string;
}

/** One POST through the guarded fetcher: no redirects followed, bounded time, the answer's body cut short. */
export async function attemptDelivery(
  fetcher: Fetcher,
  url: string,
  headers: Record<string, string>,
  body: string,
  opts: { timeoutMs: number; signal?: AbortSignal },
): Promise<AttemptOutcome> {
  try {
    const r = await fetcher.fetch(url, { method: 'POST', headers, body, maxRedirects: 0, timeoutMs: opts.timeoutMs, maxBytes: MAX_RESPONSE_BYTES, overflow: 'truncate', signal: opts.signal });
    const ok = r.status >= 200 && r.status < 300;
    const retryable = r.status === 408 || r.status === 429 || r.status >= 500;
    return { ok, retryable: !ok && retryable, status: r.status, message: `HTTP ${r.status}` };
  } catch (err) {
    if (err instanceof ToolError) {
      // RATE_LIMITED: the fetch budget was full; the receiver was not even asked.
      const retryable = err.code === 'UPSTREAM_ERROR' || err.code === 'UPSTREAM_TIMEOUT' || err.code === 'RATE_LIMITED';
      return { ok: false, retryable, status: null, message: `${err.code}: ${err.message}` };
    }
    return { ok: false, retryable: true, status: null, message: 'Delivery failed' };
  }
}
