// npm run schemas: regenerates schemas/ from the registry (test/schemas.test.ts fails when stale).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedSchemas } from './schemas.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'schemas');
fs.mkdirSync(dir, { recursive: true });
const files = generatedSchemas();
for (const f of fs.readdirSync(dir)) if (f.endsWith('.json') && !files.has(f)) fs.rmSync(path.join(dir, f));
for (const [name, content] of files) fs.writeFileSync(path.join(dir, name), content);
process.stderr.write(`wrote ${files.size} files to schemas/\n`);
