import { ERROR_STATUS, type ErrorCode } from './errors.js';
import { toJsonSchema, type JsonSchema } from './json-schema.js';
import { isRichResult, restBindings, type AnyTool, type Registry, type ToolContext } from './registry.js';

/** Error codes a tool can answer with, derived from what it is (stateful, fetching, parsing). */
export function toolErrorCodes(tool: AnyTool, method: string): ErrorCode[] {
  // FORBIDDEN: any browser request from an origin (or, on loopback, a Host) that is not allowed.
  const codes: ErrorCode[] = ['INVALID_INPUT', 'UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED'];
  if (method === 'POST') codes.push('PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE');
  if (tool.group === 'formatting' || tool.group === 'files' || tool.name === 'image_convert') codes.push('PARSE_ERROR');
  if (tool.annotations.openWorldHint) codes.push('URL_NOT_ALLOWED', 'UPSTREAM_ERROR', 'UPSTREAM_TIMEOUT');
  if (tool.group === 'shortener' || tool.group === 'cron tasks') codes.push('NOT_FOUND');
  if (tool.group === 'cron tasks' && tool.name.endsWith('create')) codes.push('PARSE_ERROR');
  if (tool.name === 'url_shorten') codes.push('CONFLICT');
  return [...new Set(codes)];
}

/** The OpenAPI tag of each tool group, with the sentence /docs shows under it. */
export const GROUP_TAGS: Record<AnyTool['group'], { name: string; description: string }> = {
  formatting: { name: 'Formatting', description: 'Convert and pretty-print data: JSON/YAML, XML, SQL, HTML entities, number bases, time zones, cron expressions.' },
  generators: { name: 'Generators', description: 'Produce things: QR codes (SVG, PNG, BMP, data URL) and converted images.' },
  seo: { name: 'SEO', description: 'Fetch a public page and read its metadata or grade it. Fetching follows the URL rules of CONTRACT §6.' },
  shortener: { name: 'Shortener', description: 'Short links under /s/{code} with click counts.' },
  'cron tasks': { name: 'Cron tasks', description: 'Scheduled tasks an agent polls (or receives as signed webhooks) and reports done. Fields are snake_case.' },
  files: { name: 'Files', description: 'Parse, generate, analyse and convert CSV, TSV, JSON and XML tables.' },
  auth: { name: 'Auth', description: 'API keys: register, and see your plan, limits and usage. Fields are snake_case.' },
};

/** A typical message per error code, for the error examples of every operation. */
const ERROR_EXAMPLES: Record<ErrorCode, { message: string; details?: unknown }> = {
  INVALID_INPUT: { message: 'Invalid input', details: [{ path: 'value', message: 'Invalid input: expected string, received number' }] },
  URL_NOT_ALLOWED: { message: 'URL resolves to a non-public address (127.0.0.1)' },
  UNAUTHORIZED: { message: 'Unknown API key' },
  FORBIDDEN: { message: 'Origin not allowed' },
  NOT_FOUND: { message: 'Not found' },
  METHOD_NOT_ALLOWED: { message: 'Method not allowed' },
  CONFLICT: { message: 'Already taken' },
  PAYLOAD_TOO_LARGE: { message: 'Request body is larger than 1048576 bytes', details: { limit: 1048576 } },
  UNSUPPORTED_MEDIA_TYPE: { message: 'Send the body as JSON with Content-Type: application/json' },
  PARSE_ERROR: { message: 'Unexpected token at line 1, column 9', details: { line: 1, column: 9 } },
  RATE_LIMITED: { message: 'Rate limit exceeded: 10 calls per minute', details: { retryAfter: 42 } },
  INTERNAL: { message: 'Internal error' },
  UPSTREAM_ERROR: { message: 'The URL answered 503' },
  UPSTREAM_TIMEOUT: { message: 'The URL did not answer within 10000 ms' },
};

const errorSchema: JsonSchema = {
  type: 'object',
  required: ['success', 'error'],
  properties: {
    success: { const: false },
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', enum: Object.keys(ERROR_STATUS) },
        message: { type: 'string' },
        details: { description: 'e.g. the failing fields `[{path, message}]`, or `{line, column}`' },
      },
    },
  },
};

function successSchema(output: JsonSchema): JsonSchema {
  const props = (output.properties ?? {}) as Record<string, unknown>;
  return {
    ...output,
    type: 'object',
    properties: { success: { const: true }, ...props },
    required: ['success', ...((output.required as string[] | undefined) ?? [])],
  };
}

/**
 * A plausible value of a JSON Schema (its example/default/const/enum when it has one), for
 * operations whose tool gives no example: every operation shows a body a reader can copy.
 */
export function sampleOf(schema: unknown, depth = 0): unknown {
  if (typeof schema !== 'object' || schema === null || depth > 8) return null;
  const s = schema as JsonSchema;
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[0];
  if ('const' in s) return s.const;
  if ('default' in s) return s.default;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  for (const k of ['anyOf', 'oneOf'] as const) {
    const alts = s[k];
    if (Array.isArray(alts)) {
      const pick = alts.find((a) => (a as JsonSchema).type !== 'null') ?? alts[0];
      return sampleOf(pick, depth + 1);
    }
  }
  const type = Array.isArray(s.type) ? (s.type as string[]).find((t) => t !== 'null') : (s.type as string | undefined);
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries((s.properties ?? {}) as Record<string, unknown>)) out[k] = sampleOf(v, depth + 1);
      return out;
    }
    case 'array':
      return s.items ? [sampleOf(s.items, depth + 1)] : [];
    case 'string':
      if (s.format === 'date-time') return '2026-11-22T09:00:00.000Z';
      if (s.format === 'uri') return 'https://example.com/';
      if (s.format === 'email') return 'dev@example.com';
      return typeof s.minLength === 'number' && s.minLength > 6 ? 'x'.repeat(s.minLength) : 'string';
    case 'integer':
    case 'number': {
      // 1 unless the bounds say otherwise (zod's safe-integer bounds are not worth showing).
      let n = 1;
      if (typeof s.minimum === 'number' && s.minimum > n) n = s.minimum;
      if (typeof s.maximum === 'number' && s.maximum < n) n = s.maximum;
      return n;
    }
    case 'boolean':
      return true;
    default:
      return null;
  }
}

const poisonedServices = new Proxy(
  {},
  {
    get() {
      throw new Error('docs: this tool uses services; no static example');
    },
  },
);

/**
 * The real answer of a tool to its example input, computed at doc-build time, but only for a
 * tool that is pure and synchronous: read-only, no network, no binary body, never touching its
 * services (a proxy that throws stands in for them), and giving the same answer twice. Anything
 * else (stateful, fetching, async, clock-dependent) gets no computed example.
 */
export function staticResponseExample(tool: AnyTool, example: unknown): Record<string, unknown> | undefined {
  const a = tool.annotations;
  if (!a.readOnlyHint || a.openWorldHint || tool.binary || example === undefined) return undefined;
  const run = (): string | undefined => {
    try {
      const parsed = tool.input.safeParse(example);
      if (!parsed.success) return undefined;
      const ctx: ToolContext = {
        caller: { keyId: null, ip: 'docs', transport: 'memory' },
        services: poisonedServices as ToolContext['services'],
        progress: () => Promise.reject(new Error('docs: no progress')),
        signal: AbortSignal.abort(),
      };
      const out = tool.handler(parsed.data as never, ctx) as unknown;
      if (typeof out === 'object' && out !== null && typeof (out as Promise<unknown>).then === 'function') {
        (out as Promise<unknown>).then(
          () => {},
          () => {},
        );
        return undefined;
      }
      const json = isRichResult(out) ? (out.body ? undefined : out.json) : out;
      if (json === undefined) return undefined;
      const checked = tool.output.safeParse(json);
      return checked.success ? JSON.stringify(checked.data) : undefined;
    } catch {
      return undefined;
    }
  };
  const first = run();
  if (first === undefined || run() !== first) return undefined;
  return { success: true, ...(JSON.parse(first) as Record<string, unknown>) };
}

function errorContent(codes: ErrorCode[]): Record<string, unknown> {
  const examples: Record<string, unknown> = {};
  for (const code of codes) {
    const e = ERROR_EXAMPLES[code];
    examples[code] = { summary: code, value: { success: false, error: { code, ...e } } };
  }
  return { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, examples } };
}

/** The §2 error responses of `codes`, one entry per status (codes sharing a status are listed together). */
export function errorResponses(codes: ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus].sort((x, y) => x[0] - y[0])) {
    out[String(status)] = {
      description: list.join(' or '),
      ...(status === 429
        ? { headers: { 'Retry-After': { description: 'Seconds until a call is allowed again', schema: { type: 'integer' } } } }
        : {}),
      content: errorContent(list),
    };
  }
  return out;
}

function annotationNote(tool: AnyTool): string {
  const a = tool.annotations;
  const parts = [
    a.readOnlyHint ? 'read-only' : 'changes state',
    a.destructiveHint ? 'destructive' : null,
    a.idempotentHint ? 'idempotent' : null,
    a.openWorldHint ? 'fetches URLs on the internet' : 'no network access',
  ].filter(Boolean);
  return parts.join(', ');
}

/**
 * Routes of the contract that are not tools but come with a tool family (CONTRACT §3): the
 * short-link redirect with the shortener, key registration with auth. Documented only when the
 * family is in the registry and no tool already claims the path.
 */
function addServiceRoutes(registry: Registry, paths: Record<string, Record<string, unknown>>): void {
  const has = (name: string) => registry.get(name) !== undefined;
  if (has('url_shorten') && !paths['/s/{code}']) {
    paths['/s/{code}'] = {
      get: {
        operationId: 'short_link_redirect',
        summary: 'Follow a short link',
        description: 'Redirects (302) to the long URL of the code and counts one click. Not a tool; not rate limited.',
        tags: [GROUP_TAGS.shortener.name],
        parameters: [
          { name: 'code', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{3,20}$' }, description: 'The short code', example: 'docs-demo' },
        ],
        responses: {
          302: { description: 'Redirect to the long URL', headers: { Location: { description: 'The long URL', schema: { type: 'string', format: 'uri' } } } },
          ...errorResponses(['NOT_FOUND']),
        },
      },
    };
  }
  if (registry.tools.some((t) => t.group === 'auth') && !paths['/api/auth/register']) {
    const limits = { per_minute: 10, per_day: 100 };
    paths['/api/auth/register'] = {
      post: {
        operationId: 'auth_register',
        summary: 'Register for an API key',
        description: 'Creates a free-plan key for an e-mail address. The key is shown only in this answer (the server keeps a hash). Limited to 5 per address per hour.',
        tags: [GROUP_TAGS.auth.name],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: { type: 'object', required: ['email'], properties: { email: { type: 'string', format: 'email', description: 'Your e-mail address' } } },
              example: { email: 'dev@example.com' },
            },
          },
        },
        responses: {
          201: {
            description: 'Created',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: {
                    success: { const: true },
                    api_key: { type: 'string' },
                    key_prefix: { type: 'string' },
                    plan: { const: 'free' },
                    email: { type: 'string' },
                    created_at: { type: 'string', format: 'date-time' },
                    limits: { type: 'object' },
                  },
                },
                example: {
                  success: true,
                  api_key: 'dtb_0123456789abcdefABCDEF0123456789',
                  key_prefix: 'dtb_0123',
                  plan: 'free',
                  email: 'dev@example.com',
                  created_at: '2026-11-22T09:00:00.000Z',
                  limits,
                },
              },
            },
          },
          ...errorResponses(['INVALID_INPUT', 'FORBIDDEN', 'CONFLICT', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED', 'INTERNAL']),
        },
      },
    };
  }
}

const INFO_DESCRIPTION = [
  'Developer tools for AI agents. **MCP is the primary interface**: streamable HTTP at `POST /mcp`',
  '(stateless, no session id) and stdio (`npx devtoolbox stdio`). Connection instructions and client',
  'configuration snippets: [the landing page](/). Every tool below is the REST projection of the same',
  'MCP tool: same validated input, same handler, same fields.',
  '',
  'JSON answers are `{"success": true, ...fields}`; errors are',
  '`{"success": false, "error": {"code", "message", "details"}}` with the status of the code',
  '(400 INVALID_INPUT / URL_NOT_ALLOWED, 401, 404, 409, 413, 415, 422 PARSE_ERROR, 429 with',
  '`Retry-After`, 502/504 for fetched URLs). Keyless calls are limited per client address; send an',
  'API key as `Authorization: Bearer dtb_…` (or `?api_key=`) for your own quota.',
].join('\n');

/** The REST operations of a tool with their OpenAPI operationIds (the first is the tool's name). */
export function operationsOf(tool: AnyTool): Array<{ method: string; path: string; operationId: string }> {
  const bindings = restBindings(tool);
  const seen = new Set<string>();
  return bindings.map((b, i) => {
    let operationId = i === 0 ? tool.name : `${tool.name}_${b.method.toLowerCase()}`;
    if (seen.has(operationId)) operationId = `${operationId}_${i}`;
    seen.add(operationId);
    return { method: b.method, path: b.path, operationId };
  });
}

/** The OpenAPI 3.1 document of every REST binding and the uniform /api/tools/{name} face. */
export function buildOpenApi(registry: Registry, opts: { serverUrl?: string } = {}): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const tool of registry.tools) {
    const input = toJsonSchema(tool.input, 'input', 'draft-2020-12');
    const output = toJsonSchema(tool.output, 'output', 'draft-2020-12');
    const inputProps = (input.properties ?? {}) as Record<string, JsonSchema>;
    const inputRequired = (input.required as string[] | undefined) ?? [];
    const example = (tool.example ?? (inputRequired.length ? sampleOf(input) : undefined)) as Record<string, unknown> | undefined;
    const computed = staticResponseExample(tool, tool.example);
    const ops = operationsOf(tool);
    for (const [i, b] of restBindings(tool).entries()) {
      const pathParams = [...b.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      const exampleOf = (name: string) => (example && name in example ? { example: example[name] } : {});
      const parameters: unknown[] = pathParams.map((name) => ({
        name,
        in: 'path',
        required: true,
        schema: inputProps[name] ?? { type: 'string' },
        description: (inputProps[name]?.description as string | undefined) ?? name,
        ...exampleOf(name),
      }));
      const operationId = ops[i]!.operationId;
      const op: Record<string, unknown> = {
        operationId,
        summary: tool.title,
        description: `${tool.description}\n\nMCP tool: \`${tool.name}\` (${annotationNote(tool)}). Also callable as \`POST /api/tools/${tool.name}\`.`,
        tags: [GROUP_TAGS[tool.group].name],
      };
      if (b.method === 'POST') {
        const body: JsonSchema = { ...input, properties: Object.fromEntries(Object.entries(inputProps).filter(([k]) => !pathParams.includes(k))) };
        body.required = inputRequired.filter((k) => !pathParams.includes(k));
        const bodyExample = example ? Object.fromEntries(Object.entries(example).filter(([k]) => !pathParams.includes(k))) : {};
        op.requestBody = {
          required: (body.required as string[]).length > 0,
          content: { 'application/json': { schema: body, example: bodyExample } },
        };
      } else {
        for (const [name, schema] of Object.entries(inputProps)) {
          if (pathParams.includes(name)) continue;
          parameters.push({
            name,
            in: 'query',
            required: inputRequired.includes(name),
            schema,
            description: (schema.description as string | undefined) ?? name,
            ...exampleOf(name),
          });
        }
      }
      if (parameters.length) op.parameters = parameters;
      const okContent: Record<string, unknown> = {
        'application/json': { schema: successSchema(output), example: computed ?? { success: true, ...(sampleOf(output) as Record<string, unknown>) } },
      };
      for (const ct of tool.binary?.contentTypes ?? []) okContent[ct] = { schema: { type: 'string', format: 'binary', contentMediaType: ct } };
      const status = b.status ?? 200;
      const okDescription = tool.binary
        ? `The image bytes (${tool.binary.contentTypes.join(', ')})${tool.binary.when ? `: ${tool.binary.when}` : ''}; JSON otherwise`
        : status === 201
          ? 'Created'
          : 'Success';
      op.responses = {
        [String(status)]: { description: okDescription, content: okContent },
        ...errorResponses([...toolErrorCodes(tool, b.method), 'INTERNAL']),
      };
      const p = b.path;
      paths[p] ??= {};
      paths[p][b.method.toLowerCase()] = op;
    }
  }
  addServiceRoutes(registry, paths);
  const first = registry.tools.find((t) => t.example !== undefined);
  paths['/api/tools/{name}'] = {
    post: {
      operationId: 'call_tool',
      summary: 'Call any tool by its MCP name',
      description:
        "The uniform face of every tool: the body is the tool's input (nothing is merged from the path or query), the answer the same as on its own path.",
      tags: ['Service'],
      parameters: [
        {
          name: 'name',
          in: 'path',
          required: true,
          schema: { type: 'string', enum: registry.tools.map((t) => t.name) },
          description: 'Tool name (MCP)',
          ...(first ? { example: first.name } : {}),
        },
      ],
      requestBody: { required: false, content: { 'application/json': { schema: { type: 'object' }, example: first?.example ?? {} } } },
      responses: {
        200: {
          description: "The tool's answer (some tools answer 201, or binary bodies)",
          content: { 'application/json': { schema: { type: 'object' }, example: (first && staticResponseExample(first, first.example)) ?? { success: true } } },
        },
        ...errorResponses(['INVALID_INPUT', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'PARSE_ERROR', 'RATE_LIMITED', 'INTERNAL']),
      },
    },
  };
  paths['/healthz'] = {
    get: {
      operationId: 'healthz',
      summary: 'Liveness',
      description: 'Answers `{"status":"ok"}` while the server runs. Not rate limited.',
      tags: ['Service'],
      responses: {
        200: {
          description: 'ok',
          content: { 'application/json': { schema: { type: 'object', properties: { status: { const: 'ok' } } }, example: { status: 'ok' } } },
        },
      },
    },
  };
  const toolListExample = registry.tools.slice(0, 1).map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: { type: 'object' } }));
  paths['/api/tools'] = {
    get: {
      operationId: 'list_tools',
      summary: 'Every tool with its input JSON Schema',
      description: 'The name, title, description and input JSON Schema of each tool, as MCP `tools/list` shows them.',
      tags: ['Service'],
      responses: {
        200: {
          description: 'The tool list',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  success: { const: true },
                  tools: {
                    type: 'array',
                    items: {
                      type: 'object',
                      properties: { name: { type: 'string' }, title: { type: 'string' }, description: { type: 'string' }, inputSchema: { type: 'object' } },
                    },
                  },
                },
              },
              example: { success: true, tools: toolListExample },
            },
          },
        },
      },
    },
  };
  const groups = [...new Set(registry.tools.map((t) => t.group))];
  // Relative first: "try it" in /docs then calls the origin the page came from, whatever
  // host name or port the browser used; the public base URL is offered as an alternative.
  const servers: Array<{ url: string; description: string }> = [{ url: '/', description: 'This server (the origin /docs was loaded from)' }];
  if (opts.serverUrl && opts.serverUrl !== '/') servers.push({ url: opts.serverUrl, description: 'Public base URL (PUBLIC_BASE_URL)' });
  return {
    openapi: '3.1.0',
    info: { title: 'devtoolbox-mcp', version: '0.1.0', description: INFO_DESCRIPTION },
    servers,
    tags: [
      ...groups.map((g) => GROUP_TAGS[g]),
      { name: 'Service', description: 'The service itself: the uniform tool endpoint, the tool list and liveness.' },
    ],
    paths,
    components: {
      schemas: { Error: errorSchema },
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'API key dtb_… (optional: keyless calls are limited per address)' },
        apiKeyQuery: { type: 'apiKey', in: 'query', name: 'api_key', description: 'The same API key in the query string' },
      },
    },
    security: [{}, { bearer: [] }, { apiKeyQuery: [] }],
  };
}
