/**
 * Pending webhook deliveries survive `kill -9`: a child process runs the scheduler on a data
 * dir, is killed right after a failed attempt was recorded, and a new process on the same dir
 * finishes the delivery with the same webhook-id.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { invokeTool } from '../src/invoke.js';
import { manualClock } from '../src/core/clock.js';
import type { AnyTool } from '../src/registry.js';
import { closeServices, createServices } from '../src/services.js';
import { cronTaskCreate } from '../src/tools/cron-tasks/cron-task-create.js';
import { logsOf, tasksOf } from '../src/tools/cron-tasks/model.js';
import { tempDir, testConfig, toolContext } from './harness.js';
import { createLogger } from '../src/log.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const children = new Set<ChildProcess>();
const servers: http.Server[] = [];
afterEach(async () => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const SCRIPT = `
import { loadConfig } from ${JSON.stringify(path.join(ROOT, 'src/config.ts'))};
import { createServices } from ${JSON.stringify(path.join(ROOT, 'src/services.ts'))};
import { startScheduler } from ${JSON.stringify(path.join(ROOT, 'src/tools/cron-tasks/scheduler.ts'))};
const config = loadConfig({ DATA_DIR: process.argv[2], FETCH_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'silent', RATE_LIMITS: 'off' });
const services = await createServices(config);
startScheduler(services, { backoff: () => Number(process.argv[3]), onEvent: (e) => console.log(JSON.stringify(e)) });
console.log(JSON.stringify({ type: 'ready' }));
`;

interface Event {
  type: string;
  attempt?: number;
  final?: boolean;
  outcome?: { ok: boolean };
}

/** Runs the scheduler child until `stop(event)` says so, then kills it with SIGKILL. */
async function runChild(dir: string, script: string, backoffMs: number, stop: (e: Event) => boolean): Promise<Event[]> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, dir, String(backoffMs)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  const events: Event[] = [];
  let buf = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop()!;
      for (const l of lines) {
        const e = JSON.parse(l) as Event;
        events.push(e);
        if (stop(e)) {
          child.kill('SIGKILL');
          resolve();
        }
      }
    });
    child.on('exit', (code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error(`child exited with ${code}`))));
  });
  await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(undefined) : child.on('exit', r)));
  children.delete(child);
  return events;
}

describe('kill -9 of the scheduler between delivery attempts', () => {
  it('the restarted process resumes the delivery with the same webhook-id', async () => {
    const hits: Array<{ headers: Record<string, string>; body: string }> = [];
    const script = [500, 200];
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        hits.push({ headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString() });
        res.writeHead(script.shift() ?? 200).end();
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;

    // A task that has been due for a minute, created while no scheduler runs.
    const dir = tempDir('dtb-cron-crash-');
    const past = manualClock(Date.now() - 2 * 60_000);
    let s = await createServices(testConfig({ DATA_DIR: dir }), { log: createLogger('silent'), clock: past });
    const { task } = (await invokeTool(cronTaskCreate as unknown as AnyTool, { name: 'crash', schedule: '* * * * *', callback_url: url }, toolContext(s))).json as {
      task: { task_id: string; callback_secret: string };
    };
    await closeServices(s);

    const scriptPath = path.join(dir, '..', `${path.basename(dir)}-scheduler.mts`);
    fs.writeFileSync(scriptPath, SCRIPT);
    try {
      // The kill lands right after attempt 1 was recorded, while attempt 2 waits (1.5 s) on disk.
      const first = await runChild(dir, scriptPath, 1500, (e) => e.type === 'attempt');
      expect(first.map((e) => e.type)).toStrictEqual(['ready', 'queued', 'attempt']);
      expect(first.find((e) => e.type === 'attempt')).toMatchObject({ attempt: 1, final: false, outcome: { ok: false } });
      expect(hits).toHaveLength(1);

      // Restart: the pending attempt 2 is made when due (resumed, not queued again).
      const second = await runChild(dir, scriptPath, 1500, (e) => e.type === 'attempt');
      expect(second.map((e) => e.type)).toStrictEqual(['ready', 'attempt']);
      expect(second.find((e) => e.type === 'attempt')).toMatchObject({ attempt: 2, final: true, outcome: { ok: true } });
    } finally {
      fs.rmSync(scriptPath, { force: true });
    }
    expect(hits).toHaveLength(2);
    expect(hits[1]!.headers['webhook-id']).toBe(hits[0]!.headers['webhook-id']);
    expect(hits[1]!.body).toBe(hits[0]!.body);
    const wh = new Webhook(task.callback_secret);
    for (const h of hits) wh.verify(h.body, h.headers);

    s = await createServices(testConfig({ DATA_DIR: dir }), { log: createLogger('silent') });
    try {
      const logs = await logsOf(s.store).query({ index: 'task_id', eq: task.task_id, order: 'desc' });
      expect(logs.map((l) => [l.status, l.attempt])).toStrictEqual([
        ['webhook_ok', 2],
        ['webhook_failed', 1],
      ]);
      expect((await tasksOf(s.store).get(task.task_id))!.webhooks).toStrictEqual([]);
    } finally {
      await closeServices(s);
    }
  // A hang guard, not a speed bound: two children compile src with tsx from a cold cache, which on
  // a loaded 2-core CI machine once took past 30 s (alone the test takes ≈ 2.6 s).
  }, 120_000);
});
