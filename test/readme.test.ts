/** The README stays true: its configuration table names every variable the server reads. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARS } from '../src/config.js';

const readme = fs.readFileSync(path.resolve(import.meta.dirname, '../README.md'), 'utf8');

describe('README', () => {
  it('the configuration table lists every variable of src/config.ts', () => {
    const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 5));
    expect(CONFIG_VARS.map((v) => v.name).filter((name) => !table.includes(`\`${name}\``))).toStrictEqual([]);
  });
});
