/**
 * The records the family stores, as types only: stored.ts (the collections, loaded before the
 * tools) and model.ts (what works on them) both read them from here, so neither imports the other.
 */
/** A task's state as callers see it (computed, never stored). */
export type TaskStatus = 'scheduled' | 'due' | 'retrying' | 'late' | 'claimed' | 'paused' | 'completed';
/** The outcome of the last reported run. */
export type LastStatus = 'done' | 'failed';
/** What a log entry records: a report, or a webhook attempt. */
export type LogStatus = 'done' | 'failed' | 'webhook_ok' | 'webhook_failed' | 'lease_expired' | 'late';

/** A worker's hold on the due occurrence (cron_task_claim): only it may report with this run_id until the lease ends. */
export interface Claim {
  run_id: string;
  /** ms since the epoch. */
  lease_until: number;
  /** When the claim was made (ISO): the run's start, for the log's duration_ms. */
  started_at: string;
}

/** One webhook message being delivered (Standard Webhooks: same id on every attempt). */
export interface PendingWebhook {
  id: string;
  /** The occurrence it announces (ISO). */
  scheduled_for: string;
  /** The exact JSON body, fixed when queued so every attempt signs the same bytes. */
  body: string;
  /** Attempts made so far. */
  attempt: number;
  /** When the next attempt may start (ms since the epoch). */
  next_attempt_at: number;
  /**
   * While an attempt is being made: until when the scheduler instance `lease_by` holds it.
   * No other instance starts an attempt before then; after it (the holder died mid-attempt),
   * another takes the attempt over under the same webhook-id.
   */
  lease_until?: number;
  lease_by?: string;
  /** A late notice only: when the lateness began (ms), the origin of its delivery lag (a due one's is scheduled_for). */
  owed_at?: number;
}

/** The stored task: the public record plus ownership, the webhook secret and scheduler state. */
export interface TaskRecord {
  task_id: string;
  /** `key:<keyId>` (`keyh:<hash>`), or `ip:<hash of the client address>` for a keyless caller (`anon` before issue 33). */
  owner: string;
  agent_id: string;
  /** `${owner}|${agent_id}`: ownership checks. */
  owner_agent: string;
  /** `${owner_agent}|${next_run_at}`: the index behind list, due list and the per-agent count. */
  agent_next: string;
  name: string;
  /** The cron expression; null for a one-shot task (run_at). */
  schedule: string | null;
  /** A one-shot task's one run time (ISO); null (or absent, before issue 33) for a recurring one. */
  run_at?: string | null;
  timezone: string;
  description: string;
  tags: string[];
  callback_url: string | null;
  callback_secret: string | null;
  max_retries: number;
  retry_count: number;
  run_count: number;
  last_run_at: string | null;
  last_status: LastStatus | null;
  next_run_at: string;
  created_at: string;
  updated_at: string;
  /** When the webhook of the current occurrence (or retry) is to be queued; null when none is owed. */
  notify_at: number | null;
  /** retry_count when notify_at was set: part of the webhook id, so each retry gets its own. */
  notify_round: number;
  webhooks: PendingWebhook[];
  /** min(notify_at, webhooks[].next_attempt_at): the scheduler's index; null = nothing to do. */
  wake_at: number | null;
  /**
   * Paused: never due, no webhook. With paused_until (ISO) it resumes by itself then — nothing
   * is written at that moment: next_run_at already holds the first fire time after it.
   * Absent in records written before issue 33 (= not paused).
   */
  paused?: boolean;
  paused_until?: string | null;
  /** A one-shot task whose run was reported done or failed for good: never due again. */
  completed?: boolean;
  /** The current claim, if any (an expired one is applied as a failed attempt when next touched). */
  claim?: Claim | null;
  /** Seconds a due stretch may last without a claim or report before the task is late; absent/null = never late. */
  grace_seconds?: number | null;
  /**
   * When the current due stretch began (ms): the occurrence's next_run_at, or — for the same
   * occurrence due again after a failed report or a lapsed lease — that moment. The task is late
   * from late_from + grace_seconds. Absent (records before lateness) = next_run_at.
   */
  late_from?: number | null;
  /** The occurrence (its next_run_at) whose lateness was already logged and announced: once per occurrence. */
  late_noticed?: string | null;
}

/** One log entry: a report or a webhook attempt of a task. */
export interface LogRecord {
  /** Sortable: ids increase in the order entries are recorded. */
  log_id: string;
  task_id: string;
  agent_id: string;
  owner_agent: string;
  status: LogStatus;
  message: string | null;
  attempt: number;
  created_at: string;
  /** A claimed run's report or lease expiry: when the claim was made, and how long until this entry. */
  started_at?: string;
  duration_ms?: number;
}
