/**
 * The messages between the pool (main thread) and its workers. Plain data only: everything
 * here crosses a structured clone.
 */
import type { Config } from '../../config.js';
import type { ErrorCode } from '../../errors.js';
import type { Caller, ExtraContent } from '../../registry.js';

/** Given to each worker at start. */
export interface WorkerData {
  /** URL of a module exporting `allTools: AnyTool[]`. */
  toolsModule: string;
  config: Config;
}

export interface RunMessage {
  type: 'run';
  id: number;
  tool: string;
  input: unknown;
  caller: Caller;
}

/** A ToolError taken apart for the trip; rebuilt as the same ToolError on the main thread. */
export interface ErrorParts {
  code: ErrorCode;
  message: string;
  details?: unknown;
  headers?: Record<string, string>;
}

/** A RichResult without its symbol brand (symbols do not survive a structured clone). */
export interface ResultParts {
  json: Record<string, unknown>;
  body?: { data: Uint8Array; contentType: string; headers?: Record<string, string> };
  content?: ExtraContent[];
}

export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'progress'; id: number; progress: number; total?: number; message?: string }
  | { type: 'log'; level: 'debug' | 'info' | 'warn' | 'error'; msg: string; extra?: unknown }
  | { type: 'done'; id: number; ok: true; result: ResultParts }
  | { type: 'done'; id: number; ok: false; error: ErrorParts };
