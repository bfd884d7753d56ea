import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { NotWellFormed, readXml, type XmlDocument } from '../../lib/xml-read.js';
import { MAX_DEPTH } from '../shared.js';
import { writeXml } from './xml-write.js';

export { XML_MAX_OUTPUT } from './xml-write.js';

/** Largest input accepted (characters). */
export const XML_MAX_INPUT = 1_000_000;
/** Deepest element nesting formatted (the parser's cost grows with depth). */
export const XML_MAX_DEPTH = MAX_DEPTH;

const Action = z.enum(['beautify', 'minify', 'validate']);

export const xmlFormat = defineTool({
  name: 'xml_format',
  title: 'XML formatter and validator',
  description:
    'Beautify (re-indent), minify or validate XML. Comments, CDATA, processing instructions and the DOCTYPE are kept; entities are never expanded. Elements holding text keep their content exactly as written. validate answers valid:false with line and column for bad XML; beautify and minify answer a 422 error with line and column.',
  input: z.object({
    input: z.string().max(XML_MAX_INPUT).describe('The XML document'),
    action: Action.default('beautify').describe('beautify (re-indent), minify (drop formatting whitespace) or validate'),
    indent: z.number().int().min(1).max(8).default(2).describe('Spaces per level for beautify, 1-8 (default 2)'),
  }),
  output: z.object({
    action: Action.describe('The action applied'),
    valid: z.boolean().describe('Whether the input is well-formed XML'),
    result: z.string().optional().describe('The formatted XML (beautify and minify)'),
    error: z
      .object({
        message: z.string(),
        line: z.number().int().describe('1-based line'),
        column: z.number().int().describe('1-based column'),
      })
      .optional()
      .describe('Why the XML is not well-formed (validate only)'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  cost: 'cpu',
  rest: { method: 'POST', path: '/api/xml-format' },
  example: { input: '<note><to>Ada</to><!-- hi --><body><![CDATA[a < b]]></body></note>', action: 'beautify', indent: 2 },
  handler: ({ input, action, indent }) => {
    let doc: XmlDocument;
    try {
      doc = readXml(input, { maxDepth: XML_MAX_DEPTH });
    } catch (err) {
      if (!(err instanceof NotWellFormed)) throw err;
      if (action === 'validate') return { action, valid: false, error: err.problem };
      throw err.toToolError();
    }
    if (action === 'validate') return { action, valid: true };
    return { action, valid: true, result: writeXml(doc, action === 'minify' ? null : ' '.repeat(indent)) };
  },
});
