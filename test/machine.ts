/**
 * Tests that need a program from the machine (redis-server, Chromium, curl) — a capability of
 * the machine, never a feature of this project: a missing tool or route must fail, not skip.
 * Under CI=true a missing program fails its tests; on a developer machine they are skipped, and
 * the run says so on stderr once per program.
 */
import { describe, it } from 'vitest';

/** A program a test needs, whether this machine has it, and how to get it. */
export interface MachineNeed {
  /** e.g. 'redis-server' */
  program: string;
  present: boolean;
  /** How to install it, for the failure or skip message. */
  install: string;
}

const warned = new Set<string>();

function warn(need: MachineNeed): void {
  if (warned.has(need.program)) return;
  warned.add(need.program);
  process.stderr.write(`\n[devtoolbox tests] SKIPPED the tests that need ${need.program} — ${missing(need)}\n\n`);
}

function missing(need: MachineNeed): string {
  return `${need.program} not found: ${need.install}`;
}

/** `describe` for tests that need `need`: runs them when present; otherwise fails (CI=true) or skips with a message. */
export function describeNeeding(need: MachineNeed, name: string, fn: () => void): void {
  if (need.present) {
    describe(name, fn);
    return;
  }
  if (process.env.CI === 'true') {
    describe(name, () => {
      it(`needs ${need.program}`, () => {
        throw new Error(missing(need));
      });
    });
    return;
  }
  warn(need);
  describe.skip(`${name} (SKIPPED: no ${need.program})`, fn);
}

/** `it` for one test that needs `need`, with the same rule as describeNeeding. */
export function itNeeding(need: MachineNeed, name: string, fn: () => Promise<void> | void, timeout?: number): void {
  if (need.present) {
    it(name, fn, timeout);
    return;
  }
  if (process.env.CI === 'true') {
    it(name, () => {
      throw new Error(missing(need));
    });
    return;
  }
  warn(need);
  it.skip(`${name} (SKIPPED: no ${need.program})`, fn);
}

