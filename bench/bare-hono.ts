// The baseline: a bare hono app answering a small JSON POST, nothing else.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const app = new Hono();
app.post('/echo', async (c) => {
  const body = (await c.req.json()) as { value?: string };
  return c.json({ success: true, value: body.value ?? null });
});
// The baseline of the short-link redirect: a GET that answers a 302.
app.get('/r', (c) => c.redirect('https://example.com/bench', 302));
// The same with a code in the path, as /s/{code} is driven (bench/links.ts).
app.get('/s/:code', (c) => c.redirect(`https://example.com/articles/${c.req.param('code')}`, 302));
const port = Number(process.env.PORT ?? 3100);
serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, () => process.stderr.write(`bare hono on ${port}\n`));
