// The baseline: a bare hono app answering a small JSON POST, nothing else.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const app = new Hono();
app.post('/echo', async (c) => {
  const body = (await c.req.json()) as { value?: string };
  return c.json({ success: true, value: body.value ?? null });
});
// The same work, answering what a limited REST base_convert answers (issue 37): its body and its
// headers (request id, the RateLimit trio, RateLimit-Policy and RateLimit), fixed. What the
// answer's bytes cost the server and the load generator, apart from any work behind them.
const LIMITED_HEADERS = {
  'x-request-id': 'LDz15vzp-1',
  'content-type': 'application/json',
  'RateLimit-Limit': '999999999',
  'RateLimit-Remaining': '999999998',
  'RateLimit-Reset': '60',
  'RateLimit-Policy': '"minute";q=999999999;w=60, "day";q=999999999;w=86400',
  RateLimit: '"minute";r=999999998;t=60, "day";r=999999998;t=41283',
};
app.post('/echo-limited', async (c) => {
  const body = (await c.req.json()) as { value?: string };
  const text = JSON.stringify({ success: true, input: body.value ?? null, from: 'dec', dec: '255', bin: '11111111', oct: '377', hex: 'ff' });
  return new Response(text, { status: 200, headers: LIMITED_HEADERS });
});
// The baseline of the short-link redirect: a GET that answers a 302.
app.get('/r', (c) => c.redirect('https://example.com/bench', 302));
// The same with a code in the path, as /s/{code} is driven (bench/links.ts).
app.get('/s/:code', (c) => c.redirect(`https://example.com/articles/${c.req.param('code')}`, 302));
const port = Number(process.env.PORT ?? 3100);
serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, () => process.stderr.write(`bare hono on ${port}\n`));
