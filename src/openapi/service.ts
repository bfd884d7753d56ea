/** The OpenAPI operations of the service itself: liveness and readiness, the tool list, the document. */
import type { Registry } from '../registry.js';
import { errorResponses } from './errors.js';

type PathItem = Record<string, unknown>;

/** `/healthz`, `/api/tools` and `/openapi.json`, in the document's order. */
export function servicePaths(registry: Registry): Record<string, PathItem> {
  return { '/healthz': healthzPath(), '/api/tools': toolListPath(registry), '/openapi.json': openApiPath() };
}

function healthzPath(): PathItem {
  return {
    get: {
      operationId: 'healthz',
      summary: 'Liveness and readiness',
      description:
        'Answers `{"status":"ok"}` while the server runs and its storage works; 503 while the stored data loads at start-up (`starting`) or while the storage fails (`storage_unavailable`, with the reason), and from SIGTERM/SIGINT on while calls in flight finish (`draining`). Not rate limited, takes no key.',
      tags: ['Service'],
      responses: {
        200: {
          description: 'ok',
          content: { 'application/json': { schema: { type: 'object', required: ['status'], properties: { status: { const: 'ok' } } }, example: { status: 'ok' } } },
        },
        ...errorResponses(['FORBIDDEN']),
        503: {
          description: 'Not ready: starting, the storage fails, or the server drains before it stops',
          headers: { 'Retry-After': { description: 'Seconds after which to ask again (not while draining)', schema: { type: 'integer' } } },
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['status'],
                properties: {
                  status: { type: 'string', enum: ['starting', 'storage_unavailable', 'draining'] },
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
}

function toolListPath(registry: Registry): PathItem {
  const toolListExample = registry.tools.slice(0, 1).map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: { type: 'object' } }));
  return {
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
        ...errorResponses(['UNAUTHORIZED', 'FORBIDDEN']),
      },
    },
  };
}

function openApiPath(): PathItem {
  return {
    get: {
      operationId: 'openapi_document',
      summary: 'This OpenAPI 3.1 document',
      description: 'The document you are reading, generated from the tool registry. Needs no key, but a key that does not exist is refused (401).',
      tags: ['Service'],
      responses: {
        200: { description: 'The OpenAPI document', content: { 'application/json': { schema: { type: 'object', required: ['openapi', 'paths'], properties: { openapi: { type: 'string' }, paths: { type: 'object' } } } } } },
        ...errorResponses(['UNAUTHORIZED', 'FORBIDDEN']),
      },
    },
  };
}
