import type { Family } from '../core/family.js';
import { toJsonSchema, type JsonSchema } from '../json-schema.js';
import { inputRuleText, ruleFields, rulesSchema } from '../input-rules.js';
import { restBindings, type AnyTool, type Registry, type RestBinding, type ToolGroup } from '../registry.js';
import type { ErrorCode } from '../errors.js';
import { withTaskOperations } from './tasks.js';
import { SERVER_NAME, SERVER_VERSION } from '../version.js';
import { errorResponses, errorSchema, toolErrorCodes } from './errors.js';
import { sampleOf, staticResponseExample } from './samples.js';
import { servicePaths } from './service.js';

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

/** The OpenAPI 3.1 document of every REST binding, the families' own routes and the uniform /api/tools/{name} face. */
export function buildOpenApi(registry: Registry<Family>, opts: { serverUrl?: string } = {}): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  addToolPaths(paths, registry);
  addFamilyRoutePaths(paths, registry.families);
  paths['/api/tools/{name}'] = { post: uniformOperation(registry) };
  Object.assign(paths, servicePaths(registry));
  // Tasks (docs/tasks.md): added by their own module.
  return withTaskOperations(documentOf(registry, paths, opts.serverUrl), registry);
}

/** What every operation of one tool reads from its schemas. */
interface ToolSchemas {
  input: JsonSchema;
  output: JsonSchema;
  props: Record<string, JsonSchema>;
  required: string[];
  example: Record<string, unknown> | undefined;
}

function toolSchemasOf(tool: AnyTool): ToolSchemas {
  const input = toJsonSchema(tool.input, 'input', 'draft-2020-12');
  const required = (input.required as string[] | undefined) ?? [];
  return {
    input,
    output: toJsonSchema(tool.output, 'output', 'draft-2020-12'),
    props: (input.properties ?? {}) as Record<string, JsonSchema>,
    required,
    example: (tool.example ?? (required.length ? sampleOf(input) : undefined)) as Record<string, unknown> | undefined,
  };
}

/** Each tool's operations, one per REST binding, in registry order. */
function addToolPaths(paths: Record<string, Record<string, unknown>>, registry: Registry): void {
  for (const tool of registry.tools) {
    const s = toolSchemasOf(tool);
    const ops = operationsOf(tool);
    for (const [i, b] of restBindings(tool).entries()) {
      paths[b.path] ??= {};
      paths[b.path]![b.method.toLowerCase()] = toolOperation(tool, b, ops[i]!.operationId, s, registry.groupOf(tool));
    }
  }
}

/** The operation of one binding of a tool: path parameters, then the body (POST) or query parameters. */
function toolOperation(tool: AnyTool, b: RestBinding, operationId: string, s: ToolSchemas, group: ToolGroup): Record<string, unknown> {
  const pathParams = [...b.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const parameters: unknown[] = pathParams.map((name) => parameterOf(name, 'path', true, s.props[name] ?? { type: 'string' }, s));
  const op: Record<string, unknown> = {
    operationId,
    summary: tool.title,
    description: `${tool.description}\n\nMCP tool: \`${tool.name}\` (${annotationNote(tool)}). Also callable as \`POST /api/tools/${tool.name}\`.`,
    tags: [group.tag.name],
  };
  if (b.method === 'POST' || b.method === 'PATCH') {
    const { requestBody, rules } = requestBodyOf(tool, s, pathParams);
    if (rules) op.description = `${op.description as string}\n\nBody rules: ${rules}.`;
    op.requestBody = requestBody;
  } else {
    for (const [name, schema] of Object.entries(s.props)) {
      if (!pathParams.includes(name)) parameters.push(parameterOf(name, 'query', s.required.includes(name), schema, s));
    }
  }
  if (parameters.length) op.parameters = parameters;
  op.responses = {
    ...successResponse(tool, b, s),
    // A path parameter of `.` or `..` is a dot segment: URL resolution removes it, and the
    // request lands on another path, which may be served with other methods only (405).
    ...errorResponses([...toolErrorCodes(tool, b.method, group), ...(b.path.includes('{') ? (['METHOD_NOT_ALLOWED'] as const) : []), 'INTERNAL']),
  };
  return op;
}

/** One path or query parameter, with the tool's example value for it. */
function parameterOf(name: string, where: 'path' | 'query', required: boolean, schema: JsonSchema, s: ToolSchemas): Record<string, unknown> {
  return {
    name,
    in: where,
    required,
    schema,
    description: (s.props[name]?.description as string | undefined) ?? name,
    ...(s.example && name in s.example ? { example: s.example[name] } : {}),
  };
}

/** A POST binding's body (the input minus path parameters) and its cross-field rules in words. */
function requestBodyOf(tool: AnyTool, s: ToolSchemas, pathParams: string[]): { requestBody: Record<string, unknown>; rules: string | undefined } {
  const body: JsonSchema = { ...s.input, properties: Object.fromEntries(Object.entries(s.props).filter(([k]) => !pathParams.includes(k))) };
  body.required = s.required.filter((k) => !pathParams.includes(k));
  const rules = (tool.inputRules ?? []).filter((r) => ruleFields(r).every((f) => !pathParams.includes(f)));
  if (rules.length) {
    const allOf = [...((s.input.allOf as unknown[] | undefined) ?? []), ...rulesSchema(rules, Object.keys(body.properties as object))];
    if (allOf.length) body.allOf = allOf;
  }
  const bodyExample = s.example ? Object.fromEntries(Object.entries(s.example).filter(([k]) => !pathParams.includes(k))) : {};
  return {
    requestBody: { required: (body.required as string[]).length > 0, content: { 'application/json': { schema: body, example: bodyExample } } },
    rules: rules.length ? rules.map(inputRuleText).join('; ') : undefined,
  };
}

/** The success answer of a binding: JSON (with an example), or the bytes of a binary tool. */
function successResponse(tool: AnyTool, b: RestBinding, s: ToolSchemas): Record<string, unknown> {
  const computed = staticResponseExample(tool, tool.example);
  const okContent: Record<string, unknown> = {
    'application/json': { schema: successSchema(s.output), example: computed ?? { success: true, ...(sampleOf(s.output) as Record<string, unknown>) } },
  };
  for (const ct of tool.binary?.contentTypes ?? []) okContent[ct] = { schema: { type: 'string', format: 'binary', contentMediaType: ct } };
  const status = b.status ?? 200;
  const description = tool.binary
    ? `The image bytes (${tool.binary.contentTypes.join(', ')})${tool.binary.when ? `: ${tool.binary.when}` : ''}; JSON otherwise`
    : status === 201
      ? 'Created'
      : 'Success';
  const headers = {
    ...RATE_LIMIT_HEADERS,
    ...Object.fromEntries(Object.entries(tool.responseHeaders ?? {}).map(([h, d]) => [h, { description: d, schema: { type: 'string' } }])),
  };
  return { [String(status)]: { description, headers, content: okContent } };
}

/**
 * The families' own routes (the short-link redirect, key registration), from the same route
 * objects the HTTP face mounts, families without tools included; a path a tool claims stays the tool's.
 */
function addFamilyRoutePaths(paths: Record<string, Record<string, unknown>>, families: readonly Family[]): void {
  for (const f of families) {
    for (const route of f.routes ?? []) {
      if (route.openapi) paths[route.path] ??= route.openapi({ errorResponses, tag: f.tag.name });
    }
  }
}

/** The groups with a tag in the document: those with tools or documented routes, in list order. */
function taggedGroups(registry: Registry<Family>): readonly ToolGroup[] {
  if (registry.families.length === 0) return registry.groups;
  return registry.families.filter((f) => f.tools.length > 0 || (f.routes ?? []).some((r) => r.openapi));
}

/** The document around the paths: info, servers, tags, components, security. */
function documentOf(registry: Registry<Family>, paths: Record<string, Record<string, unknown>>, serverUrl: string | undefined): Record<string, unknown> {
  // Relative first: "try it" in /docs then calls the origin the page came from, whatever
  // host name or port the browser used; the public base URL is offered as an alternative.
  const servers: Array<{ url: string; description: string }> = [{ url: '/', description: 'This server (the origin /docs was loaded from)' }];
  if (serverUrl && serverUrl !== '/') servers.push({ url: serverUrl, description: 'Public base URL (PUBLIC_BASE_URL)' });
  return {
    openapi: '3.1.0',
    info: { title: SERVER_NAME, version: SERVER_VERSION, description: INFO_DESCRIPTION, license: LICENSE },
    servers,
    tags: [
      ...taggedGroups(registry).map((g) => g.tag),
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
  };
}

/**
 * `POST /api/tools/{name}`: the union of what the tools answer there — their success statuses
 * (201 for the tools whose binding says so), JSON or their binary types, and every error code.
 */
function uniformOperation(registry: Registry): Record<string, unknown> {
  const first = registry.tools.find((t) => t.example !== undefined);
  const codes = new Set<ErrorCode>(['NOT_FOUND']);
  for (const tool of registry.tools) for (const code of toolErrorCodes(tool, 'POST', registry.groupOf(tool))) codes.add(code);
  codes.add('INTERNAL');
  const responses = uniformResponses(registry.tools, first);
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

/** The success answers of `POST /api/tools/{name}`, one per status the tools answer with. */
function uniformResponses(tools: readonly AnyTool[], first: AnyTool | undefined): Record<string, unknown> {
  const byStatus = new Map<number, { tools: AnyTool[]; types: Set<string> }>();
  for (const tool of tools) {
    const status = restBindings(tool)[0]?.status ?? 200;
    const entry = byStatus.get(status) ?? { tools: [], types: new Set<string>() };
    entry.tools.push(tool);
    for (const ct of tool.binary?.contentTypes ?? []) entry.types.add(ct);
    byStatus.set(status, entry);
  }
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
  return responses;
}
