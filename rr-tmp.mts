import { RegExpRouter } from 'hono/router/reg-exp-router';
import { buildService } from './src/app.js';
import { loadConfig } from './src/config.js';
import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-'));
process.env.DATA_DIR = dir; process.env.LOG_LEVEL = 'error';
const s = await buildService(loadConfig());
const routes = (s.app as unknown as { routes: { method: string; path: string }[] }).routes;
console.log('routes', routes.length);

// find the culprit: add routes one at a time
for (let n = 1; n <= routes.length; n++) { const r2 = new RegExpRouter<number>(); try { for (const rt of routes.slice(0, n)) r2.add(rt.method, rt.path, 0); r2.match('GET', '/x'); } catch (e) { console.log('breaks at', n, routes[n-1], (e as Error).message); break; } }
await s.close();
