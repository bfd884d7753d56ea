import { AsyncLocalStorage } from 'node:async_hooks';
import type { Config } from './config.js';

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;

export interface Logger {
  debug(msg: string, extra?: unknown): void;
  info(msg: string, extra?: unknown): void;
  warn(msg: string, extra?: unknown): void;
  error(msg: string, extra?: unknown): void;
}

/** Redacts API keys wherever they might appear in a logged string (query strings included). */
export function redact(s: string): string {
  return s.replace(/dtb_[A-Za-z0-9]{4,}/g, 'dtb_***').replace(/([?&]api_key=)[^&\s]*/gi, '$1***');
}

/**
 * What the log lines of one request share (LOG_FORMAT=json / LOG_REQUESTS=on): its id, and
 * what the call path learns on the way — the tool and the caller's key id prefix. Mutable: the
 * call path fills it in, the access line reads it at the end.
 */
export interface RequestLogContext {
  request_id: string;
  tool?: string;
  key_id?: string;
}

/** The request a log line belongs to (entered by the HTTP layer only when request tracking is on). */
export const requestContext = new AsyncLocalStorage<RequestLogContext>();

/** Fields a JSON line may carry besides time, level and msg; anything else goes under `extra`. */
const FIELDS = new Set(['request_id', 'method', 'route', 'status', 'duration_ms', 'tool', 'key_id']);

/** Every string in a value, redacted (JSON.stringify's replacer: a key anywhere in it is hidden). */
function redactingReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'string' ? redact(value) : value;
}

/**
 * A logger that writes one line per event to stderr (stdout is the protocol in stdio mode):
 * `text` (the default) as before, or `json` — one object per line with `time`, `level`, `msg`,
 * the request's `request_id` / `tool` / `key_id` when the line belongs to one, and the fields
 * of `extra` (an Error becomes `error`: its stack). Keys are redacted in both.
 */
export function createLogger(level: Config['logLevel'] = 'info', format: Config['logFormat'] = 'text'): Logger {
  const min = LEVELS[level];
  const text = (lvl: keyof typeof LEVELS, msg: string, extra?: unknown) => {
    let line = `${new Date().toISOString()} ${lvl.toUpperCase()} ${msg}`;
    if (extra !== undefined) {
      line += ' ' + (extra instanceof Error ? (extra.stack ?? extra.message) : safeJson(extra));
    }
    return redact(line);
  };
  const json = (lvl: keyof typeof LEVELS, msg: string, extra?: unknown) => {
    const line: Record<string, unknown> = { time: new Date().toISOString(), level: lvl, msg, ...requestContext.getStore() };
    if (extra instanceof Error) line.error = extra.stack ?? extra.message;
    else if (extra !== null && typeof extra === 'object' && !Array.isArray(extra)) {
      for (const [k, v] of Object.entries(extra)) {
        if (FIELDS.has(k)) line[k] = v;
        else ((line.extra ??= {}) as Record<string, unknown>)[k] = v;
      }
    } else if (extra !== undefined) line.extra = extra;
    return safeJson(line, redactingReplacer);
  };
  const format_ = format === 'json' ? json : text;
  const write = (lvl: keyof typeof LEVELS, msg: string, extra?: unknown) => {
    if (LEVELS[lvl] < min) return;
    process.stderr.write(format_(lvl, msg, extra) + '\n');
  };
  return {
    debug: (m, e) => write('debug', m, e),
    info: (m, e) => write('info', m, e),
    warn: (m, e) => write('warn', m, e),
    error: (m, e) => write('error', m, e),
  };
}

function safeJson(v: unknown, replacer?: (key: string, value: unknown) => unknown): string {
  try {
    return JSON.stringify(v, replacer);
  } catch {
    return String(v);
  }
}
