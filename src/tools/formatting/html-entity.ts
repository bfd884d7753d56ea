import { z } from 'zod';
import { decodeHTML } from 'entities';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';

const Action = z.enum(['auto', 'encode', 'decode']);

/** Matches a named, decimal or hex character reference. */
const ENTITY = /&(?:#[0-9]{1,8};|#[xX][0-9a-fA-F]{1,8};|[A-Za-z][A-Za-z0-9]{1,31};)/;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function encodeEntities(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

export const HTML_ENTITY_MAX_INPUT = 1_000_000;

export const htmlEntity = defineTool({
  name: 'html_entity',
  title: 'HTML entity encoder/decoder',
  description:
    'Encode the HTML special characters & < > " \' as entities, or decode every HTML5 named entity and decimal/hex numeric reference. Pass the text as `input` (default action auto: decode when the text contains entities, else encode) or as `content` (default action encode).',
  input: z.object({
    input: z.string().max(HTML_ENTITY_MAX_INPUT).optional().describe('Text to process (default action: auto)'),
    content: z.string().max(HTML_ENTITY_MAX_INPUT).optional().describe('Text to process (alternative spelling; default action: encode)'),
    action: Action.optional().describe('auto (decode if the text contains entities, else encode), encode or decode'),
    api_key: z.string().max(200).optional().describe('API key, accepted in the body for this tool only (same as Authorization: Bearer)'),
  }),
  output: z.object({
    result: z.string().describe('The encoded or decoded text'),
    action: z.enum(['encode', 'decode']).describe('The action that was applied'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'POST', path: '/api/html-entity' },
  inputRules: [{ exactlyOne: ['input', 'content'] }],
  apiKeyField: 'api_key',
  example: { input: '<a href="x">Tom & Jerry</a>', action: 'encode' },
  handler: ({ input, content, action }) => {
    const text = input ?? content;
    if (text === undefined) throw new ToolError('INVALID_INPUT', 'Give exactly one of input or content');
    let applied: 'encode' | 'decode';
    const requested = action ?? (input !== undefined ? 'auto' : 'encode');
    if (requested === 'auto') applied = ENTITY.test(text) ? 'decode' : 'encode';
    else applied = requested;
    return { result: applied === 'encode' ? encodeEntities(text) : decodeHTML(text), action: applied };
  },
});
