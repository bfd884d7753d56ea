import { describe, expect, it } from 'vitest';
import { TASK_COLLECTIONS } from '../src/core/tasks/index.js';
import { STORED_COLLECTIONS } from '../src/tools/collections.js';
import { families } from '../src/tools/index.js';

describe('STORED_COLLECTIONS (what `serve` starts loading before it imports the tools)', () => {
  it('holds every collection the families and the task manager declare, by the same definition', () => {
    const declared = [...families.flatMap((f) => f.collections ?? []), ...TASK_COLLECTIONS];
    for (const def of declared) expect(STORED_COLLECTIONS, def.name).toContain(def);
    expect(STORED_COLLECTIONS.length).toBe(new Set(declared).size);
  });
});
