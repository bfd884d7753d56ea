import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { swaggerUiDist } from '../src/docs/assets.js';
import { docsLink, escapeHtml, landingPage, mcpSnippets } from '../src/docs/pages.js';
import { ERROR_STATUS } from '../src/errors.js';
import { invokeTool } from '../src/invoke.js';
import { buildOpenApi, operationsOf, staticResponseExample, toolErrorCodes } from '../src/openapi/index.js';
import { Registry, restBindings, type AnyTool } from '../src/registry.js';
import { createRegistry } from '../src/tools/index.js';
import { testServices, toolContext, useTestApp } from './harness.js';

type Json = Record<string, any>;

/** Every src= and href= of a page. */
function references(html: string): string[] {
  return [...html.matchAll(/\b(?:src|href)\s*=\s*"([^"]*)"/gi)].map((m) => m[1]!);
}

/** The text of `<pre id="…">`, unescaped. */
function pre(html: string, id: string): string {
  const m = new RegExp(`<pre id="${id}">([\\s\\S]*?)</pre>`).exec(html);
  if (!m) throw new Error(`no pre#${id}`);
  return m[1]!.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)));
}

describe('GET / and /docs (REST)', () => {
  const t = useTestApp();
  let landing: string;
  let docs: string;
  beforeAll(async () => {
    landing = await (await t.request('GET', '/')).text();
    docs = await (await t.request('GET', '/docs')).text();
  });

  it('serves both pages as HTML with a self-only Content-Security-Policy', async () => {
    for (const p of ['/', '/docs']) {
      const res = await t.request('GET', p);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).not.toMatch(/https?:|\*/);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });

  it('references nothing outside the server (no CDN, no absolute URL, no protocol-relative URL)', () => {
    for (const html of [landing, docs]) {
      const refs = references(html);
      expect(refs.length).toBeGreaterThan(2);
      for (const r of refs) expect(r, r).toMatch(/^\/(?!\/)/);
      // No <script src> or <link href> to http(s) anywhere, even outside attributes we parse.
      expect(html).not.toMatch(/<(script|link)[^>]+(src|href)\s*=\s*["']?(https?:)?\/\//i);
    }
    expect(docs).not.toMatch(/https?:\/\//);
  });

  it('serves every asset the pages reference, with its content type, and refuses anything else', async () => {
    const refs = [...new Set([...references(landing), ...references(docs)].filter((r) => r.startsWith('/docs/assets/')))];
    const types: Record<string, string> = {
      css: 'text/css; charset=utf-8',
      js: 'text/javascript; charset=utf-8',
      png: 'image/png',
    };
    expect(refs.map((r) => r.replace(/\?.*$/, '')).sort()).toStrictEqual([
      '/docs/assets/devtoolbox.css',
      '/docs/assets/docs-init.js',
      '/docs/assets/favicon-16x16.png',
      '/docs/assets/favicon-32x32.png',
      '/docs/assets/swagger-ui-bundle.js',
      '/docs/assets/swagger-ui.css',
    ]);
    for (const r of refs) {
      const res = await t.request('GET', r);
      const ext = r.replace(/\?.*$/, '').split('.').pop()!;
      expect(res.status, r).toBe(200);
      expect(res.headers.get('content-type'), r).toBe(types[ext]);
      expect((await res.arrayBuffer()).byteLength, r).toBeGreaterThan(100);
    }
    for (const bad of ['/docs/assets/index.html', '/docs/assets/swagger-initializer.js', '/docs/assets/..%2F..%2Fpackage.json', '/docs/assets/%2e%2e%2fpackage.json', '/docs/assets/']) {
      const res = await t.request('GET', bad);
      expect(res.status, bad).toBe(404);
      expect(((await res.json()) as Json).error.code, bad).toBe('NOT_FOUND');
    }
  });

  it('serves Swagger UI from the installed swagger-ui-dist, gzipped on request, with ETag revalidation', async () => {
    const { dir, version } = swaggerUiDist();
    expect(docs).toContain(`/docs/assets/swagger-ui-bundle.js?v=${version}`);
    const file = fs.readFileSync(path.join(dir, 'swagger-ui-bundle.js'));
    const plain = await t.request('GET', '/docs/assets/swagger-ui-bundle.js');
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(Buffer.from(await plain.arrayBuffer()).equals(file)).toBe(true);
    const gz = await t.request('GET', '/docs/assets/swagger-ui-bundle.js', undefined, { 'accept-encoding': 'gzip, br' });
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    expect(gz.headers.get('cache-control')).toBe('public, max-age=86400');
    const raw = Buffer.from(await gz.arrayBuffer());
    expect(raw.byteLength).toBeLessThan(file.byteLength / 2);
    expect(zlib.gunzipSync(raw).equals(file)).toBe(true);
    const again = await t.request('GET', '/docs/assets/swagger-ui-bundle.js', undefined, { 'accept-encoding': 'gzip', 'if-none-match': gz.headers.get('etag')! });
    expect(again.status).toBe(304);
  });

  it('starts Swagger UI offline: spec from this server, no validator badge', async () => {
    const init = await (await t.request('GET', '/docs/assets/docs-init.js')).text();
    expect(init).toContain("url: '/openapi.json'");
    expect(init).toContain('validatorUrl: null');
    expect(init).not.toMatch(/https?:\/\//);
  });

  it('shows the MCP connection: HTTP URL, stdio command and client config snippets', () => {
    const base = t.services.config.publicBaseUrl;
    expect(landing).toContain(`<code id="mcp-url">${base}/mcp</code>`);
    // npx resolves a package name: the package's own (devtoolbox-mcp), never a bare "devtoolbox".
    expect(landing).toContain('<code id="stdio-command">npx -y devtoolbox-mcp stdio</code>');
    expect(landing).not.toMatch(/npx devtoolbox\b/);
    expect(landing).toContain('<code>node bin/devtoolbox.js stdio</code>');
    expect(JSON.parse(pre(landing, 'config-http'))).toStrictEqual({ mcpServers: { devtoolbox: { type: 'http', url: `${base}/mcp` } } });
    expect(JSON.parse(pre(landing, 'config-http-key'))).toStrictEqual({
      mcpServers: { devtoolbox: { type: 'http', url: `${base}/mcp`, headers: { Authorization: 'Bearer dtb_…' } } },
    });
    expect(JSON.parse(pre(landing, 'config-stdio'))).toStrictEqual({ mcpServers: { devtoolbox: { command: 'npx', args: ['-y', 'devtoolbox-mcp', 'stdio'] } } });
    expect(JSON.parse(pre(landing, 'config-stdio-checkout'))).toStrictEqual({
      mcpServers: {
        devtoolbox: { command: 'node', args: ['/path/to/devtoolbox-mcp/bin/devtoolbox.js', 'stdio'], env: { DATA_DIR: '/path/to/devtoolbox-data' } },
      },
    });
    expect(landing).toContain('href="/docs"');
  });

  // The page named only 2025-11-25, though 2026-07-28 clients are served on the same endpoint.
  it('names both MCP protocol eras', () => {
    expect(landing).toContain(
      '<span id="mcp-protocols">Both protocol eras: 2026-07-28 (stateless: <code>server/discover</code> and <code>_meta</code> on each request) and 2025-11-25 with its <code>initialize</code> handshake; older revisions negotiate.</span>',
    );
  });

  it('lists every tool under its group, linked to its operation in /docs', () => {
    for (const tool of t.registry.tools) {
      expect(landing).toContain(`<code>${tool.name}</code>`);
      for (const op of operationsOf(tool)) expect(landing).toContain(`href="${escapeHtml(docsLink(t.registry.groupOf(tool).tag.name, op.operationId))}"`);
    }
    for (const g of t.registry.groups) expect(landing).toContain(`>${g.tag.name}</h3>`);
  });

  it('redirects /docs/ to /docs', async () => {
    const res = await t.request('GET', '/docs/');
    expect(res.status).toBe(301);
    expect(res.headers.get('location')).toBe('/docs');
  });

  it('lets a same-origin browser call through (what "try it" sends)', async () => {
    const res = await t.request('POST', 'http://localhost:3000/api/base-convert', { value: '255' }, { origin: 'http://localhost:3000', host: 'localhost:3000' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as Json).hex).toBe('ff');
  });

  it('serves /openapi.json with this server first (relative), so "try it" calls the page origin', async () => {
    const doc = (await (await t.request('GET', '/openapi.json')).json()) as Json;
    expect(doc.servers).toStrictEqual([
      { url: '/', description: 'This server (the origin /docs was loaded from)' },
      { url: t.services.config.publicBaseUrl, description: 'Public base URL (PUBLIC_BASE_URL)' },
    ]);
  });
});

describe('landing page escaping', () => {
  it('escapes tool text and the base URL', () => {
    const base = createRegistry().get('base_convert')!;
    const evil: AnyTool = { ...base, title: '<script>alert(1)</script>', description: '"><img src=x onerror=alert(1)> and more words here' };
    const html = landingPage(new Registry([evil]), 'http://x"><script>y</script>');
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<img');
    expect(html).toContain('&#60;script&#62;alert(1)&#60;/script&#62;');
    expect(mcpSnippets('http://h:1').httpUrl).toBe('http://h:1/mcp');
  });
});

describe('OpenAPI operations of every tool', () => {
  const registry = createRegistry();
  const doc = buildOpenApi(registry, { serverUrl: 'http://localhost:3000' }) as Json;

  it('is OpenAPI 3.1 with one tag per tool group, each described', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.tags).toStrictEqual([...registry.groups.map((g) => g.tag), { name: 'Service', description: expect.any(String) }]);
  });

  for (const tool of registry.tools) {
    const ops = operationsOf(tool);
    for (const [i, b] of restBindings(tool).entries()) {
      it(`${b.method} ${b.path} (${tool.name}) has summary, description, schemas, examples and its §2 errors`, () => {
        const op = doc.paths[b.path]?.[b.method.toLowerCase()] as Json;
        expect(op.operationId).toBe(ops[i]!.operationId);
        expect(op.summary).toBe(tool.title);
        expect(op.description).toContain(tool.description);
        expect(op.description).toContain(`\`${tool.name}\``);
        expect(op.tags).toStrictEqual([registry.groupOf(tool).tag.name]);

        // Request: schema and an example the tool's own input schema accepts.
        let requestExample: Json = {};
        if (b.method === 'POST' || b.method === 'PATCH') {
          const media = op.requestBody.content['application/json'] as Json;
          expect(media.schema.type).toBe('object');
          expect(media).toHaveProperty('example');
          requestExample = { ...media.example };
        }
        for (const p of (op.parameters ?? []) as Json[]) {
          expect(typeof p.description).toBe('string');
          expect(p.schema).toBeTypeOf('object');
          if ('example' in p) requestExample[p.name] = p.example;
        }
        if (tool.example !== undefined) {
          expect(requestExample).toStrictEqual(tool.example);
        }
        const accepted = tool.input.safeParse(requestExample);
        expect(accepted.success, JSON.stringify(accepted.error?.issues)).toBe(true);

        // Success: JSON schema + example, and binary media types where the tool answers bytes.
        const okStatus = String(b.status ?? 200);
        const ok = op.responses[okStatus] as Json;
        expect(ok.description.length).toBeGreaterThan(3);
        expect(ok.content['application/json'].schema.properties.success).toStrictEqual({ const: true });
        expect(ok.content['application/json'].example.success).toBe(true);
        for (const ct of tool.binary?.contentTypes ?? []) {
          expect(ok.content[ct]).toStrictEqual({ schema: { type: 'string', format: 'binary', contentMediaType: ct } });
        }

        // Errors: every code the tool can answer, under its §2 status, with an example body.
        const codes = [...toolErrorCodes(tool, b.method, registry.groupOf(tool)), 'INTERNAL' as const];
        for (const code of codes) {
          const r = op.responses[String(ERROR_STATUS[code])] as Json;
          expect(r, `${code}`).toBeDefined();
          expect(r.description).toContain(code);
          const media = r.content['application/json'] as Json;
          expect(media.schema).toStrictEqual({ $ref: '#/components/schemas/Error' });
          expect(media.examples[code].value).toStrictEqual({ success: false, error: { code, ...media.examples[code].value.error } });
          expect(media.examples[code].value.error.code).toBe(code);
        }
        expect(op.responses['400']).toBeDefined();
        expect(op.responses['500']).toBeDefined();
        if (codes.includes('RATE_LIMITED')) expect(op.responses['429'].headers['Retry-After']).toBeDefined();
      });
    }
  }

  it('gives real computed response examples only for pure tools, equal to what the tool answers', async () => {
    const services = await testServices();
    try {
      const base = registry.get('base_convert')!;
      const computed = staticResponseExample(base, base.example);
      expect(computed).toStrictEqual({ success: true, input: '255', from: 'dec', dec: '255', bin: '11111111', oct: '377', hex: 'ff' });
      expect(doc.paths['/api/base-convert'].post.responses['200'].content['application/json'].example).toStrictEqual(computed);
      for (const tool of registry.tools) {
        const ex = staticResponseExample(tool, tool.example);
        if (!ex) continue;
        expect(tool.annotations.readOnlyHint && !tool.annotations.openWorldHint && !tool.binary, tool.name).toBe(true);
        const r = await invokeTool(tool, tool.example, toolContext(services));
        expect(ex, tool.name).toStrictEqual({ success: true, ...r.json });
      }
      // Stateful tools never run at doc-build time.
      for (const name of ['url_shorten', 'url_stats', 'cron_task_create', 'auth_info']) {
        const tool = registry.get(name);
        if (tool) expect(staticResponseExample(tool, tool.example), name).toBeUndefined();
      }
    } finally {
      const { closeServices } = await import('../src/services.js');
      await closeServices(services);
    }
  });

  it('does not depend on the clock (schemas/openapi.json stays stable)', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(new Date('2020-01-01T00:00:00Z'));
      const a = JSON.stringify(buildOpenApi(registry));
      vi.setSystemTime(new Date('2031-07-15T13:37:00Z'));
      const b = JSON.stringify(buildOpenApi(registry));
      expect(b).toBe(a);
    } finally {
      vi.useRealTimers();
    }
  });
});
