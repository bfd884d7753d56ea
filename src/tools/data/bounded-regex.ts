/**
 * Regular expressions run with a CPU budget. V8's backtracking engine is exponential on patterns
 * like `(a+)+$`, and a pattern is data a caller sends (regex_test, a schema's `pattern`); a vm
 * script's timeout interrupts even a running match, inline or in a pool worker alike.
 */
import vm from 'node:vm';
import { ToolError } from '../../errors.js';

/** CPU time the regular expressions of one call may take together. */
export const REGEX_BUDGET_MS = 1_000;

/** The 422 for a call whose matching passed its budget. */
export function regexTimeout(): ToolError {
  return new ToolError('PARSE_ERROR', `Matching took more than ${REGEX_BUDGET_MS / 1000} s: a pattern backtracks catastrophically on this input (nested quantifiers such as (a+)+ are the usual cause)`, {
    reason: 'timeout',
    limitMs: REGEX_BUDGET_MS,
  });
}

const COMPILE = new vm.Script('regexes.push(new RegExp(pattern, flags)), regexes.length - 1');
const TEST = new vm.Script('regexes[id].test(input)');

/**
 * A sandbox for one call's regular expressions: patterns, flags and inputs go in as strings and
 * booleans or plain arrays come out; no caller text is ever run as code.
 */
export class RegexSandbox {
  readonly #context = vm.createContext({ regexes: [] as RegExp[], pattern: '', flags: '', id: 0, input: '' });
  #spent = 0;

  /** Runs `script` in the sandbox within what is left of the budget. */
  run<T>(script: vm.Script, globals: Record<string, unknown>): T {
    Object.assign(this.#context, globals);
    const left = REGEX_BUDGET_MS - this.#spent;
    if (left <= 0) throw regexTimeout();
    const start = performance.now();
    try {
      return script.runInContext(this.#context, { timeout: Math.max(1, Math.ceil(left)) }) as T;
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw regexTimeout();
      throw err;
    } finally {
      this.#spent += performance.now() - start;
    }
  }

  /** A RegExp-like whose `test` runs in the sandbox (ajv's `code.regExp` engine shape). */
  compile(pattern: string, flags: string): { test(s: string): boolean; toString(): string } {
    const id = this.run<number>(COMPILE, { pattern, flags });
    // ajv keys its compiled patterns by toString(): "[object Object]" made them all one.
    return { test: (input: string) => this.run<boolean>(TEST, { id, input }), toString: () => `/${pattern}/${flags}` };
  }
}
