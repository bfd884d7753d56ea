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

/** A logger that writes one line per event to stderr (stdout is the protocol in stdio mode). */
export function createLogger(level: Config['logLevel'] = 'info'): Logger {
  const min = LEVELS[level];
  const write = (lvl: keyof typeof LEVELS, msg: string, extra?: unknown) => {
    if (LEVELS[lvl] < min) return;
    let line = `${new Date().toISOString()} ${lvl.toUpperCase()} ${msg}`;
    if (extra !== undefined) {
      line += ' ' + (extra instanceof Error ? (extra.stack ?? extra.message) : safeJson(extra));
    }
    process.stderr.write(redact(line) + '\n');
  };
  return {
    debug: (m, e) => write('debug', m, e),
    info: (m, e) => write('info', m, e),
    warn: (m, e) => write('warn', m, e),
    error: (m, e) => write('error', m, e),
  };
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}
