/**
 * What a task is in the store (transport-neutral). One record per task in `tasks`; a result too
 * large for one record (1 MiB) is kept in `task_chunks` beside it. docs/tasks.md explains the
 * life of a task; the MCP and REST faces translate a `TaskView` into their own shapes.
 */
import type { ErrorCode } from '../../errors.js';
import type { ExtraContent } from '../../registry.js';
import { defineCollection } from '../../state/index.js';

/** The Tasks extension's status names (we never ask for input, so never `input_required`). */
export type TaskStatus = 'working' | 'completed' | 'failed' | 'cancelled';

/** Progress the tool reported last (`ctx.progress`). */
export interface TaskProgress {
  progress: number;
  total?: number;
  message?: string;
}

/**
 * The call's outcome as the tool produced it, in no transport's shape: the structured JSON, the
 * binary body (base64) and extra MCP content of a success, or the contract's error.
 */
export type StoredOutcome =
  | {
      ok: true;
      json: Record<string, unknown>;
      body?: { base64: string; contentType: string; headers?: Record<string, string> };
      content?: ExtraContent[];
    }
  | { ok: false; error: { code: ErrorCode; message: string; details?: unknown }; headers?: Record<string, string> };

/** A JSON-RPC error object: why a task `failed` (the instance died, the server shut down …). */
export interface TaskFailure {
  code: number;
  message: string;
  data?: unknown;
}

export interface TaskRecord {
  /** Unguessable (a random UUID: 122 random bits). */
  taskId: string;
  /** `ownerKey(caller)`: `key:<id>` or `ip:<hash>`. Anyone else sees no such task. */
  owner: string;
  tool: string;
  status: TaskStatus;
  statusMessage?: string;
  progress?: TaskProgress;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  /** Epoch ms: createdAt + ttlMs. Past it the task is gone (reads say not found; the sweep deletes it). */
  expiresAt: number;
  /** The process running the task (random per start). */
  instance: string;
  /** Epoch ms: while `working`, the running instance renews this; past it the task is reported failed. */
  leaseUntil: number;
  /** completed: the outcome, when it fits in the record. */
  outcome?: StoredOutcome;
  /** completed: the number of `task_chunks` records holding the outcome (too large to fit here). */
  chunks?: number;
  /** failed: the JSON-RPC error. */
  error?: TaskFailure;
}

/** Tasks, by id; `owner` caps how many one caller keeps, `expiresAt` drives the TTL sweep. */
export const TASKS = defineCollection<TaskRecord>({ name: 'tasks', key: 'taskId', indexes: ['owner', 'expiresAt'], segmentSize: 256 });

/** A slice of a large outcome: base64 of its UTF-8 JSON, in order `<taskId>:<n>`. */
export interface TaskChunk {
  id: string;
  taskId: string;
  n: number;
  data: string;
}

// Small segments: a chunk is up to 256 KB, and a file store write rewrites its whole segment.
export const TASK_CHUNKS = defineCollection<TaskChunk>({ name: 'task_chunks', key: 'id', indexes: ['taskId'], segmentSize: 4 });

/** Collections of the core (not of a family): preloaded like the families' ones. */
export const TASK_COLLECTIONS = [TASKS, TASK_CHUNKS] as const;
