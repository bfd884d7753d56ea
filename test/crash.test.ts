/**
 * docs/contract.md §7: an acknowledged write survives `kill -9`, and no file is ever left half-written.
 * Two levels: a child process writing through the store, and the real server over HTTP. Each
 * kills its process at a random moment under concurrent load, restarts on the same data dir,
 * and checks every acknowledged record and every file.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import { defineCollection, openFileStore } from '../src/state/index.js';
import { JOURNAL_FILE, parseJournalLine } from '../src/state/file/journal.js';
import { closeAfterEach, tempDir } from './harness.js';
import { killServerProcesses, ROOT, startServerProcess, type ServerProcess } from './server-process.js';

// A failed test leaves no process behind: the writer children through closing(), the servers here.
const closing = closeAfterEach();
afterEach(killServerProcesses);

/**
 * Every data file parses as a whole JSON document, and every whole line of a journal file as a
 * change (only a last line cut short by the kill may not); returns their names.
 */
function checkFiles(dir: string): string[] {
  const names = fs.readdirSync(dir).filter((f) => f.endsWith('.json') && !f.startsWith('.'));
  for (const f of names) {
    const d = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as { records: unknown };
    expect(Array.isArray(d.records), f).toBe(true);
  }
  const journals = fs.readdirSync(dir).filter((f) => JOURNAL_FILE.test(f));
  for (const f of journals) {
    const whole = fs.readFileSync(path.join(dir, f), 'utf8').split('\n').slice(0, -1);
    expect(whole.filter((l) => parseJournalLine(l) === undefined), f).toStrictEqual([]);
  }
  expect(fs.readdirSync(dir).filter((f) => f.includes('corrupt'))).toStrictEqual([]);
  return [...names, ...journals];
}

const randomBetween = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo));

describe('kill -9 of a process writing through the store', () => {
  it('every acknowledged write survives, every file parses (several rounds on one dir)', async () => {
    const dir = tempDir('dtb-crash-store-');
    const script = path.join(dir, '..', `${path.basename(dir)}-writer.mts`);
    fs.writeFileSync(
      script,
      `import { openFileStore, defineCollection } from ${JSON.stringify(path.join(ROOT, 'src/state/index.ts'))};
       const log = { debug() {}, info() {}, warn() {}, error() {} };
       const store = await openFileStore(process.argv[2], { log });
       const items = store.collection(defineCollection({ name: 'items', key: 'id', indexes: ['round'], segmentSize: 200 }));
       const counters = store.collection(defineCollection({ name: 'counters', key: 'id' }));
       const round = process.argv[3];
       console.log('READY');
       let n = 0;
       const worker = async (w) => {
         for (;;) {
           const id = round + '-' + w + '-' + n++;
           await items.put({ id, round, payload: 'x'.repeat(n % 50) });
           console.log('ACK ' + id);
           if (n % 7 === 0) { console.log('DELETING ' + id); await items.delete(id); console.log('DEL ' + id); }
           await counters.increment('c' + (n % 5), 'n', 1, { init: { id: 'c' + (n % 5), n: 0 }, durability: n % 2 ? 'lazy' : 'durable' });
         }
       };
       for (let w = 0; w < 16; w++) void worker(w);`,
    );
    const items = defineCollection<{ id: string; round: string }>({ name: 'items', key: 'id', indexes: ['round'], segmentSize: 200 });
    const present = new Set<string>();
    for (let round = 0; round < 4; round++) {
      const acked = new Set<string>();
      // A delete that was started but not acknowledged may or may not have happened.
      const deleting = new Set<string>();
      const deleted = new Set<string>();
      const child = spawn(process.execPath, ['--import', 'tsx', script, dir, `r${round}`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
      closing({ close: () => child.kill('SIGKILL') });
      let buf = '';
      // The kill follows the writer's own progress, not a timer (a loaded machine slows both
      // alike): after the k-th line it printed, k at random, so it lands after at least one ACK
      // (the first line is one) while the other 15 workers' puts, deletes and increments are in flight.
      let untilKill = randomBetween(1, 600);
      child.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        const lines = buf.split('\n');
        buf = lines.pop()!;
        for (const l of lines) {
          if (l !== 'READY' && --untilKill === 0) child.kill('SIGKILL');
          if (l.startsWith('ACK ')) acked.add(l.slice(4));
          else if (l.startsWith('DELETING ')) deleting.add(l.slice(9));
          else if (l.startsWith('DEL ')) deleted.add(l.slice(4));
        }
      });
      const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_c, s) => resolve(s)));
      expect(signal).toBe('SIGKILL');
      expect(acked.size).toBeGreaterThan(0);
      checkFiles(dir);
      const store = await openFileStore(dir, { log: createLogger('silent') });
      const have = new Set((await store.collection(items).query()).map((r) => r.id));
      await store.close();
      for (const id of acked) if (!deleting.has(id)) present.add(id);
      expect([...present].filter((id) => !have.has(id))).toStrictEqual([]);
      expect([...deleted].filter((id) => have.has(id))).toStrictEqual([]);
    }
    fs.rmSync(script, { force: true });
  }, 60_000);
});

/** Starts `devtoolbox serve` on a free port; resolves with its base URL once it listens. */
function startServer(dataDir: string): Promise<ServerProcess> {
  return startServerProcess({ DATA_DIR: dataDir, RATE_LIMITS: 'off', PUBLIC_BASE_URL: 'http://short.test' });
}

describe('kill -9 of the real server', () => {
  it('every link acknowledged with 201 resolves after a restart, every file parses (several rounds)', async () => {
    const dir = tempDir('dtb-crash-server-');
    const acked = new Map<string, string>();
    for (let round = 0; round < 3; round++) {
      const { base, stop: stopServer } = await startServer(dir);
      // Everything acknowledged before this restart is there.
      const missing: string[] = [];
      await Promise.all(
        [...acked].map(async ([code, url]) => {
          const r = await fetch(`${base}/api/shorten?code=${code}`);
          const body = (await r.json()) as { url?: string };
          if (r.status !== 200 || body.url !== url) missing.push(code);
        }),
      );
      expect(missing).toStrictEqual([]);
      let stop = false;
      // The kill follows the server's answers, not a timer (a loaded machine may take seconds to
      // answer the first): after the k-th 201 of this round, k at random, while the 12 clients'
      // other requests are in flight.
      let untilKill = randomBetween(1, 300);
      let killedBy!: (exit: Promise<NodeJS.Signals | null>) => void;
      const killed = new Promise<NodeJS.Signals | null>((resolve) => (killedBy = resolve));
      const ack = () => {
        if (--untilKill === 0) killedBy(stopServer('SIGKILL'));
      };
      const client = async (w: number) => {
        for (let i = 0; !stop; i++) {
          const url = `https://example.com/r${round}/w${w}/${i}`;
          const body = i % 3 === 0 ? { url, code: `r${round}w${w}n${i}` } : { url };
          try {
            const r = await fetch(`${base}/api/shorten`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
            const j = (await r.json()) as { code?: string };
            // Recorded only after its 201 arrived.
            if (r.status === 201 && j.code) {
              acked.set(j.code, url);
              ack();
            }
          } catch {
            return; // the server is gone
          }
        }
      };
      const before = acked.size;
      const clients = Array.from({ length: 12 }, (_, w) => client(w));
      const exited = await killed;
      stop = true;
      await Promise.all(clients);
      expect(exited).toBe('SIGKILL');
      expect(acked.size).toBeGreaterThan(before);
      // The links are in their segment files or, created a few at a time, in their journal.
      expect(checkFiles(dir).filter((f) => f === 'links.json' || f.startsWith('links.journal.'))).not.toStrictEqual([]);
    }
    // Final restart: the whole history resolves, through the redirect's store path too.
    const { base, stop: stopServer } = await startServer(dir);
    const bad: string[] = [];
    for (const [code, url] of acked) {
      const r = await fetch(`${base}/api/shorten?code=${code}`);
      if (r.status !== 200 || ((await r.json()) as { url: string }).url !== url) bad.push(code);
    }
    expect(bad).toStrictEqual([]);
    await stopServer();
  }, 90_000);
});
