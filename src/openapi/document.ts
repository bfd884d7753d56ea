import type { Family } from '../core/family.js';
import { toJsonSchema, type JsonSchema } from '../json-schema.js';
import { inputRuleText, ruleFields, rulesSchema } from '../input-rules.js';
import { restBindings, type AnyTool, type Registry } from '../registry.js';
import type { ErrorCode } from '../errors.js';
import { withTaskOperations } from './tasks.js';
import { SERVER_NAME, SERVER_VERSION } from '../version.js';
import { errorResponses, errorSchema, toolErrorCodes } from './errors.js';
import { sampleOf, staticResponseExample } from './samples.js';

function successSchema(output: JsonSchema): JsonSchema {
  const props = (output.properties ?? {}) as Record<string, unknown>;
  return {
    ...output,
    type: 'object',
    properties: { success: { const: true }, ...props },
    required: ['success', ...((output.required as string[] | undefined) ?? [])],
  };
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

const INFO_DESCRIPTION = [
  'Developer tools for AI agents. **MCP is the primary interface**: streamable HTTP at `POST /mcp`',
  '(stateless, no session id) and stdio (`npx -y devtoolbox-mcp stdio`). Connection instructions and client',
  'configuration snippets: [the landing page](/). Every tool below is the REST projection of the same',
  'MCP tool: same validated input, same handler, same fields.',
  '',
  'JSON answers are `{"success": true, ...fields}`; binary tools (QR codes, image conversion) answer',
  'with the bytes and their `Content-Type`. Errors are',
  '`{"success": false, "error": {"code", "message", "details"}}` with the status of the code',
  '(400 INVALID_INPUT / URL_NOT_ALLOWED, 401, 403, 404, 409, 413, 415, 422 PARSE_ERROR, 429 with',
  '`Retry-After`, 502/504 for fetched URLs, 503 STORAGE_UNAVAILABLE when a write could not be stored).',
  'Keyless calls are limited per client address; send an API key as `Authorization: Bearer dtb_…`',
  '(or `?api_key=`) for your own, higher quota. The whole contract: `docs/contract.md` in the repository.',
].join('\n');

/** The license of the package (package.json `license`; a test checks they agree). */
export const LICENSE = { name: 'MIT', identifier: 'MIT' } as const;

/** Headers every limited tool answer carries (success and 429 alike). */
const RATE_LIMIT_HEADERS: Record<string, unknown> = {
  'RateLimit-Limit': { description: 'Calls allowed in the current window (absent when limits are off)', schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Calls left in the current window', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until the window resets', schema: { type: 'integer' } },
};

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
        tags: [registry.groupOf(tool).tag.name],
      };
      if (b.method === 'POST') {
        const body: JsonSchema = { ...input, properties: Object.fromEntries(Object.entries(inputProps).filter(([k]) => !pathParams.includes(k))) };
        body.required = inputRequired.filter((k) => !pathParams.includes(k));
        const rules = (tool.inputRules ?? []).filter((r) => ruleFields(r).every((f) => !pathParams.includes(f)));
        if (rules.length) {
          const allOf = [...((input.allOf as unknown[] | undefined) ?? []), ...rulesSchema(rules, Object.keys(body.properties as object))];
          if (allOf.length) body.allOf = allOf;
          op.description = `${op.description as string}\n\nBody rules: ${rules.map(inputRuleText).join('; ')}.`;
        }
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
        [String(status)]: {
          description: okDescription,
          headers: {
            ...RATE_LIMIT_HEADERS,
            ...Object.fromEntries(Object.entries(tool.responseHeaders ?? {}).map(([h, d]) => [h, { description: d, schema: { type: 'string' } }])),
          },
          content: okContent,
        },
        ...errorResponses([...toolErrorCodes(tool, b.method, registry.groupOf(tool)), 'INTERNAL']),
      };
      const p = b.path;
      paths[p] ??= {};
      paths[p][b.method.toLowerCase()] = op;
    }
  }
  // The families' own routes (e.g. the short-link redirect, key registration), unless a tool claims the path.
  for (const g of registry.groups as ReadonlyArray<Partial<Family>>) {
    for (const [p, ops] of Object.entries(g.openapi?.({ errorResponses }) ?? {})) paths[p] ??= ops;
  }
  paths['/api/tools/{name}'] = { post: uniformOperation(registry) };
  const keyErrors = errorResponses(['UNAUTHORIZED', 'FORBIDDEN']);
  paths['/healthz'] = {
    get: {
      operationId: 'healthz',
      summary: 'Liveness and readiness',
      description:
        'Answers `{"status":"ok"}` while the server runs and its storage works; 503 while the stored data loads at start-up (`starting`) or while the storage fails (`storage_unavailable`, with the reason). Not rate limited, takes no key.',
      tags: ['Service'],
      responses: {
        200: {
          description: 'ok',
          content: { 'application/json': { schema: { type: 'object', required: ['status'], properties: { status: { const: 'ok' } } }, example: { status: 'ok' } } },
        },
        ...errorResponses(['FORBIDDEN']),
        503: {
          description: 'Not ready: starting, or the storage fails',
          headers: { 'Retry-After': { description: 'Seconds after which to ask again', schema: { type: 'integer' } } },
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['status'],
                properties: {
                  status: { type: 'string', enum: ['starting', 'storage_unavailable'] },
                  reason: { type: 'string', description: 'What fails (storage_unavailable)' },
                  since: { type: 'string', format: 'date-time', description: 'Since when (storage_unavailable)' },
                },
              },
              example: { status: 'starting' },
            },
          },
        },
      },
    },
  };
  const toolListExample = registry.tools.slice(0, 1).map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: { type: 'object' } }));
  paths['/api/tools'] = {
    get: {
      operationId: 'list_tools',
      summary: 'Every tool with its input JSON Schema',
      description:
        'The name, title, description and input JSON Schema of each tool, as MCP `tools/list` shows them. Needs no key and is not rate limited, but a key that does not exist is refused (401).',
      tags: ['Service'],
      responses: {
        200: {
          description: 'The tool list',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['success', 'tools'],
                properties: {
                  success: { const: true },
                  tools: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['name', 'title', 'description', 'inputSchema'],
                      properties: { name: { type: 'string' }, title: { type: 'string' }, description: { type: 'string' }, inputSchema: { type: 'object' } },
                    },
                  },
                },
              },
              example: { success: true, tools: toolListExample },
            },
          },
        },
        ...keyErrors,
      },
    },
  };
  paths['/openapi.json'] = {
    get: {
      operationId: 'openapi_document',
      summary: 'This OpenAPI 3.1 document',
      description: 'The document you are reading, generated from the tool registry. Needs no key, but a key that does not exist is refused (401).',
      tags: ['Service'],
      responses: {
        200: { description: 'The OpenAPI document', content: { 'application/json': { schema: { type: 'object', required: ['openapi', 'paths'], properties: { openapi: { type: 'string' }, paths: { type: 'object' } } } } } },
        ...keyErrors,
      },
    },
  };
  // Relative first: "try it" in /docs then calls the origin the page came from, whatever
  // host name or port the browser used; the public base URL is offered as an alternative.
  const servers: Array<{ url: string; description: string }> = [{ url: '/', description: 'This server (the origin /docs was loaded from)' }];
  if (opts.serverUrl && opts.serverUrl !== '/') servers.push({ url: opts.serverUrl, description: 'Public base URL (PUBLIC_BASE_URL)' });
  // Tasks (docs/tasks.md): added by their own module.
  return withTaskOperations({
    openapi: '3.1.0',
    info: { title: SERVER_NAME, version: SERVER_VERSION, description: INFO_DESCRIPTION, license: LICENSE },
    servers,
    tags: [
      ...registry.groups.map((g) => g.tag),
      { name: 'Service', description: 'The service itself: the uniform tool endpoint, the tool list, this document and liveness.' },
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
  }, registry);
}

/**
 * `POST /api/tools/{name}`: the union of what the tools answer there — their success statuses
 * (201 for the tools whose binding says so), JSON or their binary types, and every error code.
 */
function uniformOperation(registry: Registry): Record<string, unknown> {
  const first = registry.tools.find((t) => t.example !== undefined);
  const byStatus = new Map<number, { tools: AnyTool[]; types: Set<string> }>();
  const codes = new Set<ErrorCode>(['NOT_FOUND']);
  for (const tool of registry.tools) {
    const status = restBindings(tool)[0]?.status ?? 200;
    const entry = byStatus.get(status) ?? { tools: [], types: new Set<string>() };
    entry.tools.push(tool);
    for (const ct of tool.binary?.contentTypes ?? []) entry.types.add(ct);
    byStatus.set(status, entry);
    for (const code of toolErrorCodes(tool, 'POST', registry.groupOf(tool))) codes.add(code);
  }
  codes.add('INTERNAL');
  const responses: Record<string, unknown> = {};
  for (const [status, { tools, types }] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const binaryTools = tools.filter((t) => t.binary);
    const content: Record<string, unknown> = {
      'application/json': {
        schema: { type: 'object', required: ['success'], properties: { success: { const: true } }, additionalProperties: true, description: "The tool's output fields (see its own operation)" },
        ...(status === 200 && first ? { example: staticResponseExample(first, first.example) ?? { success: true } } : {}),
      },
    };
    for (const ct of types) content[ct] = { schema: { type: 'string', format: 'binary', contentMediaType: ct } };
    const names = (list: AnyTool[]) => list.map((t) => `\`${t.name}\``).join(', ');
    responses[String(status)] = {
      description:
        status === 201
          ? `Created: the answer of ${names(tools)}`
          : `The tool's answer: JSON${binaryTools.length ? `, or the bytes of ${names(binaryTools)} with their Content-Type` : ''}`,
      headers: {
        ...RATE_LIMIT_HEADERS,
        ...Object.fromEntries(
          tools.flatMap((t) => Object.entries(t.responseHeaders ?? {})).map(([h, d]) => [h, { description: d, schema: { type: 'string' } }]),
        ),
      },
      content,
    };
  }
  return {
    operationId: 'call_tool',
    summary: 'Call any tool by its MCP name',
    description:
      "The uniform face of every tool: the body is the tool's input (nothing is merged from the path or query) and the answer is the same as on the tool's own path, status included (201 for " +
      `${registry.tools.filter((t) => restBindings(t)[0]?.status === 201).map((t) => `\`${t.name}\``).join(', ') || 'none'}). ` +
      "The body schema and rules of each tool are those of its own operation.",
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
    responses: { ...responses, ...errorResponses([...codes]) },
  };
}
