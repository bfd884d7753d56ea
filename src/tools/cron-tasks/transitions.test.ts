import { describe, expect, it } from 'vitest';
import { lateWebhookId, statusAt, wakeAt, webhookId } from './model.js';
import type { PendingWebhook, TaskRecord } from './records.js';
import {
  applyReport,
  claimAttempt,
  droppedMessage,
  judgeAttempt,
  leaseFree,
  queueDue,
  queueLate,
  recordAttempt,
  releaseAttempt,
  startable,
  type Lease,
  type Verdict,
} from './transitions.js';
import { dueBody, type AttemptOutcome } from './webhook.js';

// Monday 2 March 2026, 09:00 UTC: the occurrence of '0 9 * * *' that falls due.
const NOW = Date.parse('2026-03-02T09:00:00.000Z');
const OCCURRENCE = '2026-03-02T09:00:00.000Z';
const ME: Lease = { by: 'me', ms: 15_000, shared: true };

function task(over: Partial<TaskRecord> = {}): TaskRecord {
  const t: TaskRecord = {
    task_id: 'task_A',
    owner: 'anon',
    agent_id: 'a',
    owner_agent: 'anon|a',
    agent_next: `anon|a|${OCCURRENCE}`,
    name: 'Morning',
    schedule: '0 9 * * *',
    timezone: 'UTC',
    description: '',
    tags: [],
    callback_url: 'https://example.com/hook',
    callback_secret: 'whsec_c2VjcmV0',
    max_retries: 2,
    retry_count: 0,
    run_count: 0,
    last_run_at: null,
    last_status: null,
    next_run_at: OCCURRENCE,
    created_at: '2026-03-01T00:00:00.000Z',
    updated_at: '2026-03-01T00:00:00.000Z',
    notify_at: NOW,
    notify_round: 0,
    webhooks: [],
    wake_at: NOW,
    ...over,
  };
  return t;
}

function hook(id: string, over: Partial<PendingWebhook> = {}): PendingWebhook {
  return { id, scheduled_for: OCCURRENCE, body: `{"id":"${id}"}`, attempt: 0, next_attempt_at: NOW, ...over };
}

const failed: AttemptOutcome = { ok: false, retryable: true, status: 503, message: 'HTTP 503' };
const policy = { maxAttempts: 5, backoff: (n: number) => 2000 * n };

describe('queueDue: an occurrence falls due', () => {
  it('queues one webhook with an id derived from (task, occurrence, round) and the body fixed now', () => {
    const id = webhookId('task_A', OCCURRENCE, 0);
    const added = { id, scheduled_for: OCCURRENCE, body: dueBody(task(), OCCURRENCE, NOW), attempt: 0, next_attempt_at: NOW };
    expect(queueDue(task(), NOW)).toStrictEqual({ next: task({ notify_at: null, webhooks: [added], wake_at: NOW }), added, dropped: [] });
  });

  it('queued again (a crash lost the cleared notify_at), it adds nothing: once per occurrence', () => {
    const first = queueDue(task(), NOW)!.next;
    const again = queueDue({ ...first, notify_at: NOW }, NOW + 5000);
    expect(again).toStrictEqual({ next: first, added: undefined, dropped: [] });
  });

  it('a retry round gets a webhook of its own', () => {
    const q = queueDue(task({ notify_round: 1, retry_count: 1 }), NOW)!;
    expect(q.added?.id).toBe(webhookId('task_A', OCCURRENCE, 1));
    expect(q.added?.id).not.toBe(webhookId('task_A', OCCURRENCE, 0));
  });

  it('does nothing before notify_at, without a notification owed, or for a deleted task', () => {
    expect(queueDue(task({ notify_at: NOW + 1 }), NOW)).toBeUndefined();
    expect(queueDue(task({ notify_at: null }), NOW)).toBeUndefined();
    expect(queueDue(undefined, NOW)).toBeUndefined();
  });

  it('without a callback the notification is only cleared', () => {
    expect(queueDue(task({ callback_url: null, callback_secret: null }), NOW)).toStrictEqual({
      next: task({ callback_url: null, callback_secret: null, notify_at: null, wake_at: null }),
      added: undefined,
      dropped: [],
    });
  });

  it('beyond five pending deliveries the oldest is dropped, with a log line saying so', () => {
    const pending = ['w1', 'w2', 'w3', 'w4', 'w5'].map((id, i) => hook(id, { attempt: i, next_attempt_at: NOW + 60_000 }));
    const q = queueDue(task({ webhooks: pending }), NOW)!;
    expect([q.next.webhooks.map((w) => w.id), q.dropped.map((w) => w.id), q.next.wake_at]).toStrictEqual([
      ['w2', 'w3', 'w4', 'w5', q.added!.id],
      ['w1'],
      NOW,
    ]);
    expect(droppedMessage(q.dropped[0]!)).toBe('Dropped after 0 attempt(s): more than 5 deliveries pending (webhook w1)');
  });
});

describe('leases', () => {
  const held = (by: string, until: number) => hook('w', { lease_by: by, lease_until: until });

  it('an attempt is free without a lease or after it ends; before that only its holder has it', () => {
    expect([leaseFree(hook('w'), NOW, ME), leaseFree(held('other', NOW), NOW, ME), leaseFree(held('other', NOW + 1), NOW, ME)]).toStrictEqual([true, true, false]);
  });

  it('after a restart on a single-process store, a lease of the previous run is free at once', () => {
    const fileStore: Lease = { ...ME, shared: false };
    expect([leaseFree(held('previous-run', NOW + 10_000), NOW, fileStore), leaseFree(held('me', NOW + 10_000), NOW, fileStore)]).toStrictEqual([true, false]);
  });

  it('startable: due and free webhooks only', () => {
    const t = task({ webhooks: [hook('due'), hook('later', { next_attempt_at: NOW + 1 }), held('other', NOW + 1), hook('past', { next_attempt_at: NOW - 1 })] });
    expect(startable(t, NOW, ME).map((w) => w.id)).toStrictEqual(['due', 'past']);
  });
});

describe('claimAttempt, releaseAttempt', () => {
  it('a claim leases the attempt; the scheduler looks again when the lease ends', () => {
    const c = claimAttempt(task({ notify_at: null, webhooks: [hook('w')] }), 'w', NOW, ME)!;
    const leased = hook('w', { lease_until: NOW + 15_000, lease_by: 'me' });
    expect(c).toStrictEqual({ next: task({ notify_at: null, webhooks: [leased], wake_at: NOW + 15_000 }), webhook: leased });
  });

  it('no claim of an attempt not yet due, leased to another, gone, or of a task without a callback', () => {
    expect(claimAttempt(task({ webhooks: [hook('w', { next_attempt_at: NOW + 1 })] }), 'w', NOW, ME)).toBeUndefined();
    expect(claimAttempt(task({ webhooks: [hook('w', { lease_by: 'other', lease_until: NOW + 1 })] }), 'w', NOW, ME)).toBeUndefined();
    expect(claimAttempt(task({ webhooks: [hook('w')] }), 'x', NOW, ME)).toBeUndefined();
    expect(claimAttempt(task({ callback_url: null, webhooks: [hook('w')] }), 'w', NOW, ME)).toBeUndefined();
    expect(claimAttempt(undefined, 'w', NOW, ME)).toBeUndefined();
  });

  it('a stopping scheduler gives back its own lease only', () => {
    const leased = task({ notify_at: null, webhooks: [hook('w', { lease_until: NOW + 15_000, lease_by: 'me' })], wake_at: NOW + 15_000 });
    expect(releaseAttempt(leased, 'w', 'me')).toStrictEqual(task({ notify_at: null, webhooks: [hook('w')], wake_at: NOW }));
    expect(releaseAttempt(leased, 'w', 'other')).toBeUndefined();
  });
});

describe('judgeAttempt', () => {
  it('delivered: final, logged webhook_ok; the backoff is not asked', () => {
    const never = { maxAttempts: 5, backoff: (): number => { throw new Error('asked'); } };
    expect(judgeAttempt(hook('w'), { ok: true, retryable: false, status: 204, message: 'HTTP 204' }, never)).toStrictEqual({
      attempt: 1, final: true, delay: 0, status: 'webhook_ok', message: 'Delivered: HTTP 204 (webhook w)',
    });
  });

  it('a retryable failure waits for the backoff; the last allowed attempt gives up', () => {
    expect(judgeAttempt(hook('w', { attempt: 1 }), failed, policy)).toStrictEqual({
      attempt: 2, final: false, delay: 4000, status: 'webhook_failed', message: 'HTTP 503; attempt 2 of 5, next in 4s (webhook w)',
    });
    expect(judgeAttempt(hook('w', { attempt: 4 }), failed, policy)).toStrictEqual({
      attempt: 5, final: true, delay: 0, status: 'webhook_failed', message: 'HTTP 503; gave up after 5 attempts (webhook w)',
    });
  });

  it('a refusal is not retried; a negative backoff means at once', () => {
    expect(judgeAttempt(hook('w'), { ok: false, retryable: false, status: 410, message: 'HTTP 410' }, policy)).toStrictEqual({
      attempt: 1, final: true, delay: 0, status: 'webhook_failed', message: 'HTTP 410; not retried (webhook w)',
    });
    expect(judgeAttempt(hook('w'), failed, { maxAttempts: 5, backoff: () => -5 }).delay).toBe(0);
  });
});

describe('recordAttempt', () => {
  const leased = (over: Partial<PendingWebhook> = {}) => task({ notify_at: null, webhooks: [hook('w', { lease_until: NOW + 15_000, lease_by: 'me', ...over })], wake_at: NOW + 15_000 });
  const retry: Verdict = { attempt: 1, final: false, delay: 2000, status: 'webhook_failed', message: '' };

  it('a retry keeps the webhook (same id, so the same webhook-id), due again after the delay', () => {
    expect(recordAttempt(leased(), 'w', 'me', retry, NOW + 300)).toStrictEqual(
      task({ notify_at: null, webhooks: [hook('w', { attempt: 1, next_attempt_at: NOW + 2300 })], wake_at: NOW + 2300 }),
    );
  });

  it('a final verdict takes the webhook off the queue', () => {
    expect(recordAttempt(leased(), 'w', 'me', { ...retry, final: true, delay: 0 }, NOW + 300)).toStrictEqual(task({ notify_at: null, webhooks: [], wake_at: null }));
  });

  it('taken over by another scheduler after the lease, or gone: the attempt is not recorded', () => {
    expect(recordAttempt(leased({ lease_by: 'other' }), 'w', 'me', retry, NOW)).toBeUndefined();
    expect(recordAttempt(task({ webhooks: [] }), 'w', 'me', retry, NOW)).toBeUndefined();
    expect(recordAttempt(undefined, 'w', 'me', retry, NOW)).toBeUndefined();
  });

  it('queue, fail, retry, deliver: one webhook id throughout, then nothing left to do', () => {
    let t = queueDue(task(), NOW)!.next;
    const id = t.webhooks[0]!.id;
    const ids: string[] = [];
    let at = NOW;
    for (const outcome of [failed, failed, { ok: true, retryable: false, status: 200, message: 'HTTP 200' }]) {
      const c = claimAttempt(t, id, at, ME)!;
      ids.push(c.webhook.id);
      const v = judgeAttempt(c.webhook, outcome, policy);
      t = recordAttempt(c.next, id, ME.by, v, at + 100)!;
      at = t.wake_at ?? at;
    }
    expect([ids, t.webhooks, t.wake_at]).toStrictEqual([[id, id, id], [], null]);
  });
});

describe('applyReport', () => {
  it('failed with retries left: due now, a new notification round', () => {
    const { next, attempt, retry } = applyReport(task({ notify_at: null, wake_at: null }), 'failed', NOW + 60_000);
    expect([attempt, retry, next.retry_count, next.next_run_at, next.notify_at, next.notify_round, next.wake_at]).toStrictEqual([
      1, { scheduled: true, attempt: 1, max_retries: 2 }, 1, OCCURRENCE, NOW + 60_000, 1, NOW + 60_000,
    ]);
  });

  it('done: the next fire time, its notification owed then', () => {
    const { next, retry } = applyReport(task({ notify_at: null, wake_at: null }), 'done', NOW + 60_000);
    const fire = '2026-03-03T09:00:00.000Z';
    expect([retry, next.run_count, next.last_status, next.next_run_at, next.agent_next, next.notify_at, next.wake_at]).toStrictEqual([
      { scheduled: false, attempt: 0, max_retries: 2 }, 1, 'done', fire, `anon|a|${fire}`, Date.parse(fire), Date.parse(fire),
    ]);
  });
});

describe('queueLate', () => {
  const graced = (over: Partial<TaskRecord> = {}) => {
    const t = task({ grace_seconds: 60, late_from: NOW, notify_at: null, ...over });
    return { ...t, wake_at: wakeAt(t) };
  };
  const LATE = NOW + 60_000;

  it('nothing before the grace ends; at its end, once: late_noticed set, one webhook with the late id, the index moves on', () => {
    const t = graced();
    expect(t.wake_at).toBe(LATE);
    expect(statusAt(t, LATE - 1)).toBe('due');
    expect(queueLate(t, LATE - 1)).toBeUndefined();
    expect(statusAt(t, LATE)).toBe('late');
    const n = queueLate(t, LATE)!;
    expect(n.since).toBe(LATE);
    expect(n.added).toMatchObject({ id: lateWebhookId('task_A', OCCURRENCE), scheduled_for: OCCURRENCE, attempt: 0, next_attempt_at: LATE, owed_at: LATE });
    expect(n.added!.id).not.toBe(webhookId('task_A', OCCURRENCE, 0));
    expect(n.next).toMatchObject({ late_noticed: OCCURRENCE, wake_at: LATE, webhooks: [n.added] });
    expect(queueLate(n.next, LATE + 3_600_000)).toBeUndefined();
    // The status stays late until a claim or a report; only the notice is once.
    expect(statusAt(n.next, LATE + 3_600_000)).toBe('late');
  });

  it('without callback_url: noticed (for the log) with no webhook; the scheduler still wakes for it', () => {
    const t = graced({ callback_url: null, callback_secret: null });
    expect(t.wake_at).toBe(LATE);
    const n = queueLate(t, LATE)!;
    expect(n.added).toBeUndefined();
    expect(n.next).toMatchObject({ late_noticed: OCCURRENCE, webhooks: [], wake_at: null });
  });

  it('never owed for a task without grace, a claimed, an untimed-paused or a completed one', () => {
    const claim = { run_id: 'run_x', lease_until: LATE + 600_000, started_at: OCCURRENCE };
    for (const t of [graced({ grace_seconds: null }), graced({ claim }), graced({ paused: true, paused_until: null }), graced({ completed: true })]) {
      expect([t.wake_at === null || t.wake_at === claim.lease_until, queueLate(t, LATE + 1)]).toStrictEqual([true, undefined]);
    }
    expect(statusAt(graced({ claim }), LATE)).toBe('claimed');
    expect(statusAt(graced({ paused: true, paused_until: null }), LATE)).toBe('paused');
  });

  it('a failed report starts the retry’s own stretch; the occurrence is not announced again', () => {
    const n = queueLate(graced(), LATE)!;
    const r = applyReport({ ...n.next, webhooks: [] }, 'failed', LATE + 10_000).next;
    expect(r).toMatchObject({ retry_count: 1, late_from: LATE + 10_000, late_noticed: OCCURRENCE });
    expect(statusAt(r, LATE + 69_999)).toBe('retrying');
    expect(statusAt(r, LATE + 70_000)).toBe('late');
    expect(queueLate(r, LATE + 70_000)).toBeUndefined();
    // done: the next occurrence, its own stretch, announceable again.
    const d = applyReport(r, 'done', LATE + 80_000).next;
    expect(d).toMatchObject({ next_run_at: '2026-03-03T09:00:00.000Z', late_from: Date.parse('2026-03-03T09:00:00.000Z'), late_noticed: null });
  });
});
