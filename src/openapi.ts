import { ERROR_STATUS, type ErrorCode } from './errors.js';
import { toJsonSchema, type JsonSchema } from './json-schema.js';
import { restBindings, type AnyTool, type Registry } from './registry.js';

/** Error codes a tool can answer with, derived from what it is (stateful, fetching, parsing). */
export function toolErrorCodes(tool: AnyTool, method: string): ErrorCode[] {
  const codes: ErrorCode[] = ['INVALID_INPUT', 'UNAUTHORIZED', 'RATE_LIMITED'];
  if (method === 'POST') codes.push('PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE');
  if (tool.group === 'formatting' || tool.group === 'files' || tool.name === 'image_convert') codes.push('PARSE_ERROR');
  if (tool.annotations.openWorldHint) codes.push('URL_NOT_ALLOWED', 'UPSTREAM_ERROR', 'UPSTREAM_TIMEOUT');
  if (tool.group === 'shortener' || tool.group === 'cron tasks') codes.push('NOT_FOUND');
  if (tool.group === 'cron tasks' && tool.name.endsWith('create')) codes.push('PARSE_ERROR');
  if (tool.name === 'url_shorten') codes.push('CONFLICT');
  return [...new Set(codes)];
}

const GROUP_TAGS: Record<AnyTool['group'], string> = {
  formatting: 'Formatting',
  generators: 'Generators',
  seo: 'SEO',
  shortener: 'Shortener',
  'cron tasks': 'Cron tasks',
  files: 'Files',
  auth: 'Auth',
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
        details: {},
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

/** The OpenAPI 3.1 document of every REST binding and the uniform /api/tools/{name} face. */
export function buildOpenApi(registry: Registry, opts: { serverUrl?: string } = {}): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const byCode = (codes: ErrorCode[]) => {
    const out: Record<string, unknown> = {};
    for (const code of codes) {
      const status = String(ERROR_STATUS[code]);
      const prev = out[status] as { description: string } | undefined;
      out[status] = {
        description: prev ? `${prev.description}, ${code}` : code,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    return out;
  };
  for (const tool of registry.tools) {
    const input = toJsonSchema(tool.input, 'input', 'draft-2020-12');
    const output = toJsonSchema(tool.output, 'output', 'draft-2020-12');
    const inputProps = (input.properties ?? {}) as Record<string, JsonSchema>;
    for (const b of restBindings(tool)) {
      const pathParams = [...b.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      const parameters: unknown[] = pathParams.map((name) => ({
        name,
        in: 'path',
        required: true,
        schema: inputProps[name] ?? { type: 'string' },
        description: (inputProps[name]?.description as string | undefined) ?? name,
      }));
      const op: Record<string, unknown> = {
        operationId: `${tool.name}${b.method === 'POST' ? '' : '_' + b.method.toLowerCase()}`,
        summary: tool.title,
        description: tool.description + `\n\nMCP tool: \`${tool.name}\`.`,
        tags: [GROUP_TAGS[tool.group]],
      };
      if (b.method === 'POST') {
        const body: JsonSchema = { ...input, properties: Object.fromEntries(Object.entries(inputProps).filter(([k]) => !pathParams.includes(k))) };
        if (Array.isArray(body.required)) body.required = (body.required as string[]).filter((k) => !pathParams.includes(k));
        op.requestBody = {
          required: false,
          content: { 'application/json': { schema: body, ...(tool.example ? { example: tool.example } : {}) } },
        };
      } else {
        for (const [name, schema] of Object.entries(inputProps)) {
          if (pathParams.includes(name)) continue;
          parameters.push({
            name,
            in: 'query',
            required: ((input.required as string[] | undefined) ?? []).includes(name),
            schema,
            description: (schema.description as string | undefined) ?? name,
            ...(tool.example && name in (tool.example as object) ? { example: (tool.example as Record<string, unknown>)[name] } : {}),
          });
        }
      }
      if (parameters.length) op.parameters = parameters;
      const okContent: Record<string, unknown> = { 'application/json': { schema: successSchema(output) } };
      for (const ct of tool.binary?.contentTypes ?? []) okContent[ct] = { schema: { type: 'string', format: 'binary' } };
      op.responses = {
        [String(b.status ?? 200)]: { description: tool.binary?.when ?? 'Success', content: okContent },
        ...byCode(toolErrorCodes(tool, b.method)),
        500: { description: 'INTERNAL (a bug)', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      };
      const p = b.path;
      paths[p] ??= {};
      paths[p][b.method.toLowerCase()] = op;
    }
  }
  paths['/api/tools/{name}'] = {
    post: {
      operationId: 'call_tool',
      summary: 'Call any tool by its MCP name',
      description: 'The uniform face of every tool: the body is the tool\'s input, the answer the same as on its own path.',
      tags: ['Tools'],
      parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string', enum: registry.tools.map((t) => t.name) }, description: 'Tool name' }],
      requestBody: { content: { 'application/json': { schema: { type: 'object' } } } },
      responses: { 200: { description: 'The tool\'s answer' }, ...byCode(['INVALID_INPUT', 'NOT_FOUND', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED']) },
    },
  };
  paths['/healthz'] = {
    get: { operationId: 'healthz', summary: 'Liveness', tags: ['Service'], responses: { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'object', properties: { status: { const: 'ok' } } } } } } } },
  };
  paths['/api/tools'] = {
    get: { operationId: 'list_tools', summary: 'Every tool with its input JSON Schema', tags: ['Service'], responses: { 200: { description: 'The tool list' } } },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'devtoolbox-mcp',
      version: '0.1.0',
      description: 'Developer tools for AI agents. MCP at POST /mcp (streamable HTTP, stateless) and over stdio; the same tools as REST endpoints.',
    },
    servers: opts.serverUrl ? [{ url: opts.serverUrl }] : [],
    tags: [...new Set(registry.tools.map((t) => GROUP_TAGS[t.group]))].map((name) => ({ name })),
    paths,
    components: {
      schemas: { Error: errorSchema },
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'API key dtb_…' },
        apiKeyQuery: { type: 'apiKey', in: 'query', name: 'api_key' },
      },
    },
    security: [{}, { bearer: [] }, { apiKeyQuery: [] }],
  };
}
