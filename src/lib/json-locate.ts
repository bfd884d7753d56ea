import { charAt, wholeCodePoints } from './code-points.js';

/**
 * V8's JSON.parse message with whole characters: it quotes the offending UTF-16 unit (`'\ud83d'`
 * for 😀) and may cut its excerpt of the input inside a pair. The quoted unit at `offset` (from
 * jsonErrorOffset) becomes its whole character; any other half pair becomes U+FFFD.
 */
export function jsonParseMessage(message: string, input: string, offset: number): string {
  const whole = offset >= 0 ? charAt(input, offset) : '';
  const fixed = whole.length === 2 ? message.replace(`'${whole[0]}'`, `'${whole}'`) : message;
  return wholeCodePoints(fixed);
}

/**
 * Finds the offset of the first syntax error in a JSON text. V8's JSON.parse messages only
 * sometimes carry a position, and agents need line and column to fix their input.
 * Returns -1 if the text is valid JSON. Iterative: no recursion on nesting.
 */
export function jsonErrorOffset(s: string): number {
  let i = 0;
  const n = s.length;
  const ws = () => {
    while (i < n) {
      const c = s.charCodeAt(i);
      if (c === 32 || c === 9 || c === 10 || c === 13) i++;
      else break;
    }
  };
  // stack of containers: 'a' array, 'o' object
  const stack: string[] = [];
  // state: expecting a value
  const str = (): boolean => {
    if (s[i] !== '"') return false;
    i++;
    while (i < n) {
      const c = s.charCodeAt(i);
      if (c === 34) {
        i++;
        return true;
      }
      if (c < 32) return false;
      if (c === 92) {
        const e = s[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(s.slice(i + 2, i + 6))) {
            i += 2;
            return false;
          }
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else {
          i++;
          return false;
        }
      } else i++;
    }
    return false;
  };
  const scalar = (): boolean => {
    const m = /^(?:-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(s.slice(i, i + 400));
    if (!m) return false;
    i += m[0].length;
    return true;
  };
  ws();
  for (;;) {
    // expect a value
    ws();
    if (i >= n) return i;
    const c = s[i];
    if (c === '{') {
      i++;
      ws();
      if (s[i] === '}') {
        i++;
      } else {
        stack.push('o');
        if (!str()) return i;
        ws();
        if (s[i] !== ':') return i;
        i++;
        continue;
      }
    } else if (c === '[') {
      i++;
      ws();
      if (s[i] === ']') {
        i++;
      } else {
        stack.push('a');
        continue;
      }
    } else if (c === '"') {
      if (!str()) return i;
    } else if (!scalar()) return i;
    // after a value: close containers or take a comma
    for (;;) {
      ws();
      const top = stack[stack.length - 1];
      if (top === undefined) {
        return i < n ? i : -1;
      }
      if (s[i] === ',') {
        i++;
        ws();
        if (top === 'o') {
          if (!str()) return i;
          ws();
          if (s[i] !== ':') return i;
          i++;
        }
        break;
      }
      if ((top === 'o' && s[i] === '}') || (top === 'a' && s[i] === ']')) {
        stack.pop();
        i++;
        continue;
      }
      return i;
    }
  }
}
