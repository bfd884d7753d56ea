/**
 * A family's own routes are data (src/core/route.ts): the HTTP face mounts and validates them,
 * and OpenAPI documents them from the same objects — a family with routes and no tools too.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { testConfig } from '../../test/harness.js';
import { buildService, type Service } from '../app.js';
import type { Family } from '../core/family.js';
import { defineRoute } from '../core/route.js';
import { ToolError } from '../errors.js';
import { buildOpenApi } from '../openapi/index.js';
import { families } from '../tools/index.js';

const seen: string[] = [];

/** Routes only: no tool, so the registry's `groups` leave it out (its `families` do not). */
const echoFamily: Family = {
  name: 'echo',
  instructions: 'echo numbers back.',
  tag: { name: 'Echo', description: 'A family of routes only.' },
  tools: [],
  routes: [
    defineRoute({
      method: 'POST',
      path: '/echo/{id}',
      input: { params: z.object({ id: z.string().regex(/^\d+$/) }), body: z.object({ n: z.number().int() }) },
      headers: { 'X-Route': 'echo' },
      before: (ctx) => {
        seen.push('before');
        if (ctx.header('x-refuse') !== undefined) throw new ToolError('FORBIDDEN', 'Refused before the body');
        ctx.setHeader('X-Before', 'ran');
      },
      handler: ({ params, body }) => ({ status: 201, body: { id: params.id, n: body.n } }),
      openapi: (h) => ({ post: { operationId: 'echo_number', summary: 'Echo a number', tags: [h.tag], responses: h.errorResponses(['INVALID_INPUT']) } }),
    }),
    defineRoute({ method: 'GET', path: '/echo-method', handler: (_input, { method }) => new Response(method) }),
    defineRoute({ method: 'GET', path: '/echo-hidden', enabled: () => false, handler: () => ({ body: {} }) }),
  ],
};

let service: Service | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
  seen.length = 0;
});

async function start(): Promise<Service> {
  service = await buildService(testConfig(), {}, [...families, echoFamily]);
  await service.ready;
  return service;
}

const post = (s: Service, path: string, body: string, headers: Record<string, string> = {}) =>
  s.app.request(path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

describe('family routes as data', () => {
  it('serves a routes-only family: input validated, route-wide and `before` headers on the answer', async () => {
    const s = await start();
    const ok = await post(s, '/echo/7', '{"n": 3}');
    expect([ok.status, ok.headers.get('content-type'), ok.headers.get('x-route'), ok.headers.get('x-before')]).toStrictEqual([201, 'application/json', 'echo', 'ran']);
    expect(await ok.json()).toStrictEqual({ success: true, id: '7', n: 3 });
  });

  it('answers 400 INVALID_INPUT per field, as for a tool, with the route\'s headers', async () => {
    const s = await start();
    const bad = await post(s, '/echo/7', '{"n": "three"}');
    const body = (await bad.json()) as { error: { code: string; message: string; details: unknown } };
    expect([bad.status, bad.headers.get('x-route'), body.error.code, body.error.details]).toStrictEqual([400, 'echo', 'INVALID_INPUT', [{ path: 'n', message: expect.any(String) }]]);
    expect(body.error.message).toMatch(/^Invalid input: n /);
    const notObject = (await (await post(s, '/echo/7', '[1]')).json()) as { error: { message: string } };
    expect(notObject.error.message).toMatch(/^Invalid input: the body /);
    const badPath = await post(s, '/echo/x', '{"n": 3}');
    expect(((await badPath.json()) as { error: { details: unknown } }).error.details).toStrictEqual([{ path: 'id', message: expect.any(String) }]);
  });

  it('runs `before` ahead of the body: its refusal wins over a malformed body', async () => {
    const s = await start();
    const res = await post(s, '/echo/7', '{not json', { 'x-refuse': '1' });
    expect([res.status, res.headers.get('x-route'), seen]).toStrictEqual([403, 'echo', ['before']]);
  });

  it('answers HEAD on a GET route with the method the handler saw, and mounts no disabled route', async () => {
    const s = await start();
    const head = await s.app.request('/echo-method', { method: 'HEAD' });
    expect([head.status, await head.text()]).toStrictEqual([200, '']);
    expect(await (await s.app.request('/echo-method')).text()).toBe('GET');
    expect((await s.app.request('/echo-hidden')).status).toBe(404);
  });

  it('documents the routes-only family in OpenAPI (its tag, its operations), from the same list the app serves', async () => {
    const s = await start();
    const doc = buildOpenApi(s.registry) as { paths: Record<string, Record<string, { operationId: string; tags: string[] }>>; tags: Array<{ name: string }> };
    expect(s.registry.groups.map((g) => g.name)).not.toContain('echo');
    expect(doc.paths['/echo/{id}']?.post).toMatchObject({ operationId: 'echo_number', tags: ['Echo'] });
    expect(doc.paths['/echo-method']).toBeUndefined();
    expect(doc.tags.map((t) => t.name)).toContain('Echo');
    expect(await (await s.app.request('/openapi.json')).json()).toStrictEqual(JSON.parse(JSON.stringify(buildOpenApi(s.registry, { serverUrl: s.services.config.publicBaseUrl }))));
  });
});
