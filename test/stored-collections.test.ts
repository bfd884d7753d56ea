import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TASK_COLLECTIONS } from '../src/core/tasks/index.js';
import { families } from '../src/tools/index.js';
import { manifests, STORED_COLLECTIONS } from '../src/tools/manifests.js';

const TOOLS = path.resolve(import.meta.dirname, '../src/tools');

describe('the family list (src/tools/manifests.ts)', () => {
  it('names every folder of src/tools/ once, by its folder name', () => {
    const folders = fs.readdirSync(TOOLS, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    expect(manifests.map((m) => m.name).sort()).toStrictEqual(folders.sort());
  });

  it('loads each family with its manifest\'s name and collections, in the list\'s order', () => {
    expect(families.map((f) => [f.name, f.collections])).toStrictEqual(manifests.map((m) => [m.name, m.collections]));
  });

  it('STORED_COLLECTIONS (what `serve` starts loading before it imports the tools) holds every collection, by the same definition', () => {
    const declared = [...families.flatMap((f) => f.collections ?? []), ...TASK_COLLECTIONS];
    expect(STORED_COLLECTIONS.length).toBe(declared.length);
    expect(STORED_COLLECTIONS.filter((d, i) => d !== declared[i])).toStrictEqual([]);
    expect(new Set(STORED_COLLECTIONS.map((d) => d.name)).size).toBe(STORED_COLLECTIONS.length);
  });
});
