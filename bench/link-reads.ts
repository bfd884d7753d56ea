// Store reads of cold codes at 1M links on the file store (issue 32): CPU µs per `links.get` of
// uniform random codes in one process (process.cpuUsage: what other jobs on the machine do not
// inflate much), right after a load, when most segments have not been read yet.
// `node --import tsx bench/link-reads.ts` — LINKS (default 1000000), READS (default 100000),
// DIR (a data dir to seed once and reuse; default a temp dir, removed).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../src/log.js';
import { openFileStore } from '../src/state/index.js';
import { LINKS, type LinkRecord } from '../src/tools/shortener/links.js';

const log = createLogger('error');
const n = Number(process.env.LINKS ?? 1_000_000);
const m = Number(process.env.READS ?? 100_000);
const code = (i: number) => `pre${i.toString(36)}`;
const dir = process.env.DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-link-reads-'));

try {
  if (!fs.existsSync(path.join(dir, 'seeded'))) {
    fs.mkdirSync(dir, { recursive: true });
    const store = await openFileStore(dir, { log });
    const createdAt = new Date().toISOString();
    for (let s = 0; s < n; s += 5000) {
      const recs: LinkRecord[] = [];
      for (let i = s; i < Math.min(n, s + 5000); i++) {
        recs.push({ code: code(i), url: `https://example.com/articles/${i}/a-fairly-typical-slug?utm_source=bench`, createdAt, creator: 'key:bench', creatorKeyId: 'bench', creatorDay: `key:bench|${createdAt.slice(0, 10)}` });
      }
      await store.putMany(LINKS, recs);
    }
    await store.close();
    fs.writeFileSync(path.join(dir, 'seeded'), '');
  }
  const store = await openFileStore(dir, { log });
  const links = store.collection(LINKS);
  await links.get(code(0)); // the load
  let a = 7;
  const codes = Array.from({ length: m }, () => code(Math.floor(((a = (Math.imul(a, 1103515245) + 12345) >>> 0) / 4294967296) * n)));
  const t0 = process.cpuUsage();
  let found = 0;
  for (const c of codes) if (await links.get(c)) found++;
  const d = process.cpuUsage(t0);
  await store.close();
  console.log(JSON.stringify({ links: n, reads: m, found, cpuUsPerRead: Math.round(((d.user + d.system) / m) * 100) / 100 }));
} finally {
  if (!process.env.DIR) fs.rmSync(dir, { recursive: true, force: true });
}
