/**
 * What the model pays for: the bytes of each tool's entry in `tools/list` (description, input
 * schema, output schema, the rest), per toolset and in all, as the HTTP answer lists them (with
 * icons on PUBLIC_BASE_URL=http://localhost:3000). `npx tsx scripts/tools-list-size.ts [--json]`.
 */
import { listing } from '../src/mcp/answers.js';
import { createRegistry } from '../src/tools/index.js';

const registry = createRegistry();
const entries = listing(registry, 'http://localhost:3000') as Array<Record<string, unknown>>;
const bytes = (v: unknown): number => (v === undefined ? 0 : Buffer.byteLength(JSON.stringify(v)));

const rows = entries.map((e) => {
  const total = bytes(e);
  return { tool: String(e['name']), family: registry.groupOf(registry.get(String(e['name']))!).name, total, description: bytes(e['description']), input: bytes(e['inputSchema']), output: bytes(e['outputSchema']) };
});
if (process.argv.includes('--json')) {
  console.log(JSON.stringify(rows));
} else {
  console.log('tool\tfamily\ttotal\tdescription\tinput\toutput');
  for (const r of rows) console.log(`${r.tool}\t${r.family}\t${r.total}\t${r.description}\t${r.input}\t${r.output}`);
  const families = [...new Set(rows.map((r) => r.family))];
  for (const f of families) console.log(`[${f}]\t${rows.filter((r) => r.family === f).reduce((s, r) => s + r.total, 0)}`);
  console.log(`[all]\t${rows.reduce((s, r) => s + r.total, 0)} (${rows.length} tools)`);
}
