import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedSchemas } from '../scripts/schemas.js';

const dir = path.join(import.meta.dirname, '..', 'schemas');

describe('schemas/', () => {
  it('matches the registry (run `npm run schemas` when this fails)', () => {
    const want = generatedSchemas();
    const have = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
    expect(have).toStrictEqual([...want.keys()].sort());
    for (const [name, content] of want) {
      expect(fs.readFileSync(path.join(dir, name), 'utf8'), `schemas/${name} is stale`).toBe(content);
    }
  });
});
