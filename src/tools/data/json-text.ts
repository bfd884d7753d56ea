/** Reading the JSON texts the data tools take, with errors that name the field and the place. */
import { ToolError } from '../../errors.js';
import { parseJsonText } from '../shared.js';

/** `text` parsed as JSON; a 422 naming `field`, line and column when it is not JSON or nests too deeply. */
export function parseJsonField(text: string, field: string): unknown {
  return parseJsonText(text, field);
}

/**
 * The length of `JSON.stringify(value, null, indent)`, computed without building it. Each object
 * is measured once (a query's results share subtrees: `$..*` lists every subtree of a document
 * under every ancestor), its text at depth d being `chars + indent·d·lines`.
 */
export function jsonSize(value: unknown, indent: number): number {
  const memo = new Map<object, { chars: number; lines: number }>();
  const measure = (v: unknown): { chars: number; lines: number } | undefined => {
    if (v === null) return { chars: 4, lines: 0 };
    switch (typeof v) {
      case 'string':
        return { chars: JSON.stringify(v).length, lines: 0 };
      case 'number':
        return { chars: Number.isFinite(v) ? String(v).length : 4, lines: 0 };
      case 'boolean':
        return { chars: v ? 4 : 5, lines: 0 };
      case 'object': {
        const known = memo.get(v);
        if (known) return known;
        let chars = 0;
        let lines = 0;
        let items = 0;
        const add = (size: { chars: number; lines: number }, prefix: number) => {
          chars += (indent ? indent + 1 : 0) + prefix + size.chars + indent * size.lines;
          lines += 1 + size.lines;
          items++;
        };
        if (Array.isArray(v)) for (const item of v) add(measure(item) ?? { chars: 4, lines: 0 }, 0);
        else
          for (const [k, item] of Object.entries(v)) {
            const size = measure(item);
            if (size) add(size, JSON.stringify(k).length + (indent ? 2 : 1));
          }
        // Brackets, commas between items; with indentation a newline before the closing bracket.
        const size = items === 0 ? { chars: 2, lines: 0 } : { chars: chars + 2 + (items - 1) + (indent ? 1 : 0), lines: indent ? lines + 1 : 0 };
        memo.set(v, size);
        return size;
      }
      default:
        return undefined;
    }
  };
  return (measure(value) ?? { chars: 4, lines: 0 }).chars;
}

/**
 * Refuses a value whose JSON text (indented by `indent`) would pass `max` characters, measured
 * exactly without building it: a query or patch can make a 1 MB document far larger (`$..*`
 * repeats every subtree at every level above it).
 */
export function checkJsonSize(value: unknown, indent: number, max: number, what: string): void {
  const size = jsonSize(value, indent);
  if (size > max) throw new ToolError('PARSE_ERROR', `The ${what} would be ${size} characters of JSON; the limit is ${max}. Ask for less`, { limit: max });
}

/** `value` as JSON text indented by `indent`, refused past `max` characters before it is built. */
export function jsonText(value: unknown, indent: number, max: number, what: string): string {
  checkJsonSize(value, indent, max, what);
  return JSON.stringify(value, null, indent) ?? 'null';
}
