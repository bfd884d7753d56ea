import { ToolError } from '../errors.js';
import { jsonErrorOffset, jsonParseMessage } from '../lib/json-locate.js';
import { lineColumn } from '../lib/line-column.js';

/** Small helpers shared by tool handlers. */

export { lineColumn } from '../lib/line-column.js';

/**
 * Depth of nesting of a parsed JSON-like value, computed iteratively (no recursion, so a
 * hostile 100k-deep value cannot overflow the stack). Stops counting past `limit`.
 */
export function depthExceeds(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d > limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, d + 1]);
    }
  }
  return false;
}

/** Maximum nesting any tool accepts in structured input or output. */
export const MAX_DEPTH = 256;

/**
 * `text` parsed as JSON, or a 422 PARSE_ERROR with the line and column of the fault (and `field`,
 * when the tool takes several JSON texts); also refused when it nests deeper than MAX_DEPTH,
 * since the libraries that read it next recurse (100k levels would overflow the stack).
 */
export function parseJsonText(text: string, field?: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const off = jsonErrorOffset(text);
    const at = lineColumn(text, off < 0 ? text.length : off);
    const msg = err instanceof Error ? jsonParseMessage(err.message, text, off) : 'Invalid JSON';
    const where = `at line ${at.line}, column ${at.column}: ${msg}`;
    throw new ToolError('PARSE_ERROR', field ? `${field} is not valid JSON ${where}` : `Invalid JSON ${where}`, field ? { field, ...at } : at);
  }
  if (depthExceeds(value, MAX_DEPTH)) {
    throw new ToolError('PARSE_ERROR', `${field ?? 'JSON'} is nested too deeply (limit ${MAX_DEPTH} levels)`, field ? { field } : undefined);
  }
  return value;
}

/**
 * Bounds how many heavy jobs run at once (e.g. image decodes, ~200 MB each at 50 MP). Callers
 * past `max` wait in line; past `maxQueue` waiting they are refused with 429 and Retry-After.
 */
export class JobGate {
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(
    readonly max: number,
    readonly maxQueue: number,
    readonly what: string,
  ) {}

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.#running >= this.max) {
      if (this.#waiting.length >= this.maxQueue) {
        throw new ToolError('RATE_LIMITED', `Too many ${this.what} in progress; retry in a moment`, { running: this.#running, waiting: this.#waiting.length }, { 'Retry-After': '1' });
      }
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else this.#running++;
    try {
      return await job();
    } finally {
      const next = this.#waiting.shift();
      // The slot passes straight to the next waiter, so #running stays counted.
      if (next) next();
      else this.#running--;
    }
  }

  get load(): { running: number; waiting: number } {
    return { running: this.#running, waiting: this.#waiting.length };
  }
}
