/**
 * The OpenAPI part of tasks (docs/tasks.md): `Prefer: respond-async` and the 202 answer on every
 * long-running tool's operations, and the `/api/tasks/{id}` operations. Applied to the finished
 * document by buildOpenApi.
 */
import { restBindings, type Registry } from '../registry.js';
import { errorResponses } from './errors.js';

/** The task operations belong to the service, not to a tool group. */
const TAG = 'Service';

const EXAMPLE_ID = '786512e2-9e0d-44bd-8f29-789f320fe840';

const progressSchema = {
  type: 'object',
  required: ['progress'],
  properties: { progress: { type: 'number' }, total: { type: 'number' }, message: { type: 'string' } },
  description: 'The progress the tool reported last',
};

/** A task as REST shows it (the MCP Task fields, camelCase). */
const taskSchema = {
  type: 'object',
  required: ['success', 'taskId', 'tool', 'status', 'createdAt', 'lastUpdatedAt', 'ttlMs', 'pollIntervalMs', 'location'],
  properties: {
    success: { const: true },
    taskId: { type: 'string', description: 'Unguessable id (a random UUID)' },
    tool: { type: 'string', description: 'The tool (MCP name)' },
    status: { type: 'string', enum: ['working', 'completed', 'failed', 'cancelled'] },
    statusMessage: { type: 'string', description: 'Progress while working; why it failed or was cancelled' },
    progress: progressSchema,
    createdAt: { type: 'string', format: 'date-time' },
    lastUpdatedAt: { type: 'string', format: 'date-time' },
    ttlMs: { type: 'integer', description: 'The task and its result are kept this long from createdAt, then removed (404)' },
    pollIntervalMs: { type: 'integer', description: 'Suggested polling interval' },
    location: { type: 'string', description: 'This task: /api/tasks/{id}' },
    resultUrl: { type: 'string', description: 'completed: where the synchronous answer is replayed (JSON or bytes)' },
    resultStatus: { type: 'integer', description: 'completed: the HTTP status the synchronous call would have answered' },
    result: { type: 'object', description: 'completed with a JSON answer: the body the synchronous call would have answered (success or error)' },
    resultContentType: { type: 'string', description: 'completed with a binary answer: its Content-Type (fetch the bytes from resultUrl)' },
    resultBytes: { type: 'integer', description: 'completed with a binary answer: its size' },
    error: {
      type: 'object',
      description: 'failed: why (the instance running it stopped, the server shut down, the result was too large)',
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} },
    },
  },
};

const now = '2026-11-23T01:00:00.000Z';
const working = { success: true, taskId: EXAMPLE_ID, tool: 'seo_check', status: 'working', createdAt: now, lastUpdatedAt: now, ttlMs: 3_600_000, pollIntervalMs: 1000, location: `/api/tasks/${EXAMPLE_ID}` };

const retryAfter = { 'Retry-After': { description: 'Seconds to wait before polling', schema: { type: 'integer' } } };

const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'The task id (from Location)', example: EXAMPLE_ID };

const PREFER = {
  name: 'Prefer',
  in: 'header',
  required: false,
  schema: { type: 'string', examples: ['respond-async'] },
  description: '`respond-async`: answer 202 with a task to poll instead of waiting (this tool may take seconds). A call refused or invalid at once is answered as usual.',
};

const accepted = {
  description: 'A task was created (Prefer: respond-async): poll Location',
  headers: {
    Location: { description: '/api/tasks/{id}', schema: { type: 'string' } },
    'Preference-Applied': { description: 'respond-async', schema: { type: 'string' } },
    ...retryAfter,
  },
  content: { 'application/json': { schema: taskSchema, example: working } },
};

/** Adds the task operations to a built document (and `Prefer` / 202 to long-running tools' operations). */
export function withTaskOperations(doc: Record<string, unknown>, registry: Registry): Record<string, unknown> {
  const paths = doc.paths as Record<string, Record<string, Record<string, unknown>>>;
  const slow = registry.tools.filter((t) => t.longRunning);
  for (const tool of slow) {
    for (const b of restBindings(tool)) {
      const op = paths[b.path]?.[b.method.toLowerCase()];
      if (!op) continue;
      op.parameters = [...((op.parameters as unknown[] | undefined) ?? []), PREFER];
      op.responses = { '202': accepted, ...(op.responses as object) };
    }
  }
  const uniform = paths['/api/tools/{name}']?.post;
  if (uniform && slow.length) {
    uniform.parameters = [...((uniform.parameters as unknown[] | undefined) ?? []), { ...PREFER, description: `${PREFER.description} Honoured for ${slow.map((t) => `\`${t.name}\``).join(', ')}.` }];
    uniform.responses = { '202': accepted, ...(uniform.responses as object) };
  }
  const common = errorResponses(['NOT_FOUND', 'UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED', 'INTERNAL', 'STORAGE_UNAVAILABLE']);
  paths['/api/tasks/{id}'] = {
    get: {
      operationId: 'get_task',
      summary: 'Poll a task',
      description:
        'Status, progress and, once completed, the result: `result` is the body the synchronous call would have answered (binary results: `resultContentType`, `resultBytes`, fetch `resultUrl`). Only the caller that created the task (same API key, or same address for keyless calls) sees it; anyone else gets 404, as for an unknown or expired id. Polling takes no unit of the limits but is bounded per caller (429 with Retry-After).',
      tags: [TAG],
      parameters: [idParam],
      responses: { '200': { description: 'The task', headers: retryAfter, content: { 'application/json': { schema: taskSchema, example: working } } }, ...common },
    },
    delete: {
      operationId: 'cancel_task',
      summary: 'Cancel a task',
      description: 'A working task is cancelled at once (its work is aborted); a finished one is left as it is. Idempotent.',
      tags: [TAG],
      parameters: [idParam],
      responses: {
        '200': { description: 'The task after the request', content: { 'application/json': { schema: taskSchema, example: { ...working, status: 'cancelled', statusMessage: 'Cancelled at the client’s request' } } } },
        ...common,
      },
    },
  };
  paths['/api/tasks/{id}/result'] = {
    get: {
      operationId: 'get_task_result',
      summary: 'The result of a completed task',
      description: "Exactly what the synchronous call would have answered: the tool's JSON (or its error, with its status), or the bytes with their Content-Type and headers. 409 while the task is not completed.",
      tags: [TAG],
      parameters: [idParam],
      responses: {
        '200': {
          description: "The tool's answer",
          content: {
            'application/json': { schema: { type: 'object', required: ['success'], properties: { success: { const: true } } }, example: { success: true } },
            'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
          },
        },
        ...errorResponses(['INVALID_INPUT', 'NOT_FOUND', 'CONFLICT', 'UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED', 'URL_NOT_ALLOWED', 'PARSE_ERROR', 'PAYLOAD_TOO_LARGE', 'INTERNAL', 'UPSTREAM_ERROR', 'UPSTREAM_TIMEOUT', 'STORAGE_UNAVAILABLE']),
      },
    },
  };
  return doc;
}
