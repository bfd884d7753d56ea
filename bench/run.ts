// npm run bench: every benchmark of the service, one after another, figures as JSON on stdout.
// BENCH_SECONDS (per load run, default 6), BENCH_ROUNDS (default 3), BENCH_ONLY=http,media,… to pick.
import { benchHttp } from './http.js';

type Bench = () => Promise<Record<string, unknown>>;

const benches: Record<string, () => Promise<Bench>> = {
  http: async () => benchHttp,
  media: async () => (await import('./media.js')).benchMedia,
  shortener: async () => (await import('./shortener.js')).benchShortener,
  links: async () => (await import('./links.js')).benchLinks,
  'links-steady': async () => (await import('./links-steady.js')).benchLinksSteady,
  'cron-tasks': async () => (await import('./cron-tasks.js')).benchCronTasks,
  'file-process': async () => (await import('./file-process.js')).benchFileProcess,
  pool: async () => (await import('./pool.js')).benchPool,
  mcp: async () => (await import('./mcp.js')).benchMcp,
  growth: async () => (await import('./growth.js')).benchGrowth,
  redis: async () => (await import('./redis.js')).benchRedis,
  'redis-wait': async () => (await import('./redis-wait.js')).benchRedisWait,
  oauth: async () => (await import('./oauth.js')).benchOAuth,
  'cluster-pubsub': async () => (await import('./cluster-pubsub.js')).benchClusterPubsub,
  observability: async () => (await import('./observability.js')).benchObservability,
};

const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
const out: Record<string, unknown> = { node: process.version, cpus: (await import('node:os')).cpus().length };
for (const [name, get] of Object.entries(benches)) {
  if (only && !only.includes(name)) continue;
  process.stderr.write(`bench: ${name}…\n`);
  try {
    out[name] = await (await get())();
  } catch (err) {
    out[name] = { error: err instanceof Error ? err.message : String(err) };
  }
  process.stderr.write(`${name}: ${JSON.stringify(out[name])}\n`);
}
console.log(JSON.stringify(out, null, 2));
