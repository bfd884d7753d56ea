import { XMLParser, XMLValidator, type X2jOptions } from 'fast-xml-parser';
import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { lineColumn, MAX_DEPTH } from '../shared.js';

/** Largest input accepted (characters). */
export const XML_MAX_INPUT = 1_000_000;
/** Largest formatted result (characters): deep documents at indent 8 grow fast. */
export const XML_MAX_OUTPUT = 4_000_000;
/** Deepest element nesting formatted (the parser's cost grows with depth). */
export const XML_MAX_DEPTH = MAX_DEPTH;

// Element names go through the parser prefixed with a character that no XML name contains, so
// names such as __proto__ or constructor are plain data here (the parser refuses them otherwise).
// The parser may apply the prefix twice (self-closing tags), so every leading one is stripped.
const NAME_MARK = '\u0001';

const PARSER_OPTIONS: X2jOptions = {
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  commentPropName: '#comment',
  cdataPropName: '#cdata',
  textNodeName: '#text',
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  // Entities stay exactly as written: nothing declared in a DOCTYPE is ever expanded.
  processEntities: false,
  htmlEntities: false,
  ignoreDeclaration: false,
  ignorePiTags: false,
  allowBooleanAttributes: false,
  captureMetaData: true,
  maxNestedTags: XML_MAX_DEPTH,
  transformTagName: (name) => NAME_MARK + name,
};

const META = XMLParser.getMetaDataSymbol() as unknown as symbol;

type XmlNode = Record<string, unknown>;
interface Meta {
  startIndex?: number;
  endIndex?: number;
}

/** Where and why the document is not well-formed. */
export interface XmlProblem {
  message: string;
  line: number;
  column: number;
}

class NotWellFormed extends Error {
  constructor(readonly problem: XmlProblem) {
    super(problem.message);
  }
}

function problemAt(text: string, offset: number, message: string): NotWellFormed {
  return new NotWellFormed({ message, ...lineColumn(text, offset) });
}

function shorten(message: string): string {
  return message.length > 300 ? `${message.slice(0, 300)}…` : message;
}

const isXmlSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r';
const BLANK = /^[ \t\n\r]*$/;
const BUILTIN_ENTITY = /^(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+)$/;

// ---------------------------------------------------------------------------------------------
// Prolog and epilog: what surrounds the root element. The parser drops the DOCTYPE and keeps
// comments without positions, so the top level is read here, verbatim.

/** End (exclusive) of the DOCTYPE starting at `i`, or -1 when it is not closed. */
function doctypeEnd(text: string, i: number): number {
  let depth = 0;
  for (let j = i + 9; j < text.length; j++) {
    const c = text[j];
    if (c === '"' || c === "'") {
      const e = text.indexOf(c, j + 1);
      if (e < 0) return -1;
      j = e;
    } else if (depth > 0 && text.startsWith('<!--', j)) {
      const e = text.indexOf('-->', j + 4);
      if (e < 0) return -1;
      j = e + 2;
    } else if (depth > 0 && text.startsWith('<?', j)) {
      const e = text.indexOf('?>', j + 2);
      if (e < 0) return -1;
      j = e + 1;
    } else if (c === '[') depth++;
    else if (c === ']') depth = Math.max(0, depth - 1);
    else if (c === '>' && depth === 0) return j + 1;
  }
  return -1;
}

function checkComment(text: string, start: number, body: string): void {
  const dd = body.indexOf('--');
  if (dd >= 0) throw problemAt(text, start + 4 + dd, 'A comment must not contain "--"');
  if (body.endsWith('-')) throw problemAt(text, start + 4 + body.length - 1, 'A comment must not end with "-"');
}

/** Reads comments, processing instructions and (in the prolog) the DOCTYPE from `i`. */
function scanMisc(text: string, i: number, where: 'prolog' | 'epilog', items: string[]): { next: number; doctype?: [number, number] } {
  let doctype: [number, number] | undefined;
  while (i < text.length) {
    if (isXmlSpace(text[i])) {
      i++;
      continue;
    }
    if (text.startsWith('<?', i)) {
      const end = text.indexOf('?>', i + 2);
      if (end < 0) throw problemAt(text, i, 'Processing instruction is not closed');
      if (i > 0 && /^<\?xml[ \t\n\r?]/i.test(text.slice(i, i + 6))) throw problemAt(text, i, 'The XML declaration is allowed only at the start of the document');
      items.push(text.slice(i, end + 2));
      i = end + 2;
    } else if (text.startsWith('<!--', i)) {
      const end = text.indexOf('-->', i + 4);
      if (end < 0) throw problemAt(text, i, 'Comment is not closed');
      checkComment(text, i, text.slice(i + 4, end));
      items.push(text.slice(i, end + 3));
      i = end + 3;
    } else if (text.startsWith('<!DOCTYPE', i)) {
      if (where === 'epilog') throw problemAt(text, i, 'The DOCTYPE must come before the root element');
      if (doctype) throw problemAt(text, i, 'Only one DOCTYPE is allowed');
      const end = doctypeEnd(text, i);
      if (end < 0) throw problemAt(text, i, 'DOCTYPE is not closed');
      doctype = [i, end];
      items.push(text.slice(i, end));
      i = end;
    } else if (text[i] === '<') {
      if (where === 'epilog') throw problemAt(text, i, 'Only one root element is allowed');
      return { next: i, doctype };
    } else {
      throw problemAt(text, i, `Text is not allowed ${where === 'prolog' ? 'before' : 'after'} the root element`);
    }
  }
  if (where === 'prolog') throw problemAt(text, text.length, 'The document has no root element');
  return { next: i, doctype };
}

// ---------------------------------------------------------------------------------------------
// The tree.

type Kind = 'element' | 'text' | 'comment' | 'cdata' | 'pi';

function kindOf(node: XmlNode): { kind: Kind; key: string } {
  for (const key of Object.keys(node)) {
    if (key === ':@') continue;
    if (key === '#text') return { kind: 'text', key };
    if (key === '#comment') return { kind: 'comment', key };
    if (key === '#cdata') return { kind: 'cdata', key };
    if (key.startsWith('?')) return { kind: 'pi', key };
    return { kind: 'element', key };
  }
  return { kind: 'text', key: '#text' };
}

const elementName = (key: string) => key.replace(/^\u0001+/, '');
const children = (node: XmlNode, key: string) => (node[key] as XmlNode[] | undefined) ?? [];
const innerText = (node: XmlNode, key: string) => String(children(node, key)[0]?.['#text'] ?? '');
const attributes = (node: XmlNode) => Object.entries((node[':@'] as Record<string, unknown> | undefined) ?? {});
const meta = (node: XmlNode) => (node as Record<symbol, Meta | undefined>)[META] ?? {};

/** Well-formedness rules the validator leaves out, checked over the whole tree (iteratively). */
function checkTree(text: string, roots: XmlNode[], hasDoctype: boolean): void {
  const stack: Array<{ node: XmlNode; parentStart: number }> = roots.map((node) => ({ node, parentStart: 0 }));
  while (stack.length) {
    const { node, parentStart } = stack.pop()!;
    const { kind, key } = kindOf(node);
    if (kind === 'element') {
      const start = meta(node).startIndex ?? parentStart;
      for (const [name, v] of attributes(node)) {
        const value = String(v);
        if (value.includes('<')) throw problemAt(text, start, `Attribute ${name.slice(2)} of <${elementName(key)}> must not contain "<"`);
        if (!hasDoctype) checkEntities(text, start, value);
      }
      for (const child of children(node, key)) stack.push({ node: child, parentStart: start });
    } else if (kind === 'text') {
      const value = String(node[key]);
      if (value.includes(']]>')) throw problemAt(text, parentStart, 'Text must not contain "]]>" outside a CDATA section');
      if (!hasDoctype) checkEntities(text, parentStart, value);
    } else if (kind === 'comment') {
      const body = innerText(node, key);
      const at = text.indexOf(`<!--${body}-->`, parentStart);
      checkComment(text, at < 0 ? parentStart : at, body);
    } else if (kind === 'pi' && key.toLowerCase() === '?xml') {
      throw problemAt(text, meta(node).startIndex ?? parentStart, 'The XML declaration is allowed only at the start of the document');
    }
  }
}

function checkEntities(text: string, at: number, value: string): void {
  for (const m of value.matchAll(/&([^;&]*);/g)) {
    if (!BUILTIN_ENTITY.test(m[1]!)) throw problemAt(text, at, `Entity &${m[1]!.slice(0, 40)}; is not declared (there is no DOCTYPE)`);
  }
}

// ---------------------------------------------------------------------------------------------
// Output.

class Output {
  readonly parts: string[] = [];
  #size = 0;
  push(s: string): void {
    this.#size += s.length;
    if (this.#size > XML_MAX_OUTPUT) {
      const message = `The formatted result would exceed ${XML_MAX_OUTPUT} characters; try minify or a smaller indent`;
      throw new ToolError('INVALID_INPUT', message, [{ path: 'input', message }]);
    }
    this.parts.push(s);
  }
}

function startTag(name: string, node: XmlNode): string {
  let s = `<${name}`;
  for (const [k, v] of attributes(node)) s += ` ${k.slice(2)}="${String(v).replace(/"/g, '&quot;')}"`;
  return s;
}

/**
 * Element content that is only markup (elements, comments, PIs) and blank text can be
 * re-indented; content with real text or CDATA is kept exactly as written.
 */
function isElementOnly(kids: XmlNode[]): boolean {
  let markup = false;
  for (const k of kids) {
    const { kind, key } = kindOf(k);
    if (kind === 'cdata') return false;
    if (kind === 'text') {
      if (!BLANK.test(String(k[key]))) return false;
    } else markup = true;
  }
  return markup;
}

function spacePreserve(node: XmlNode, inherited: boolean): boolean {
  for (const [k, v] of attributes(node)) if (k === '@_xml:space') return v === 'preserve';
  return inherited;
}

/** Everything but element-only content: written as parsed. */
function writeLeaf(text: string, node: XmlNode, kind: Kind, key: string, out: Output): void {
  if (kind === 'text') out.push(String(node[key]));
  else if (kind === 'comment') out.push(`<!--${innerText(node, key)}-->`);
  else if (kind === 'cdata') out.push(`<![CDATA[${innerText(node, key)}]]>`);
  else {
    const m = meta(node);
    out.push(text.slice(m.startIndex ?? 0, m.endIndex ?? 0));
  }
}

/** `indent` null = minify. Element-only content is re-indented (or squeezed); the rest is verbatim. */
function writeNode(text: string, node: XmlNode, depth: number, indent: string | null, preserve: boolean, out: Output): void {
  const { kind, key } = kindOf(node);
  if (kind !== 'element') return writeLeaf(text, node, kind, key, out);
  const name = elementName(key);
  const kids = children(node, key);
  const tag = startTag(name, node);
  if (kids.length === 0) return out.push(`${tag}/>`);
  const keep = spacePreserve(node, preserve);
  out.push(`${tag}>`);
  if (keep || !isElementOnly(kids)) {
    for (const k of kids) writeNode(text, k, depth + 1, indent, true, out);
  } else {
    for (const k of kids) {
      const { kind: kk, key: kkey } = kindOf(k);
      if (kk === 'text') continue; // blank: formatting only
      if (indent !== null) out.push(`\n${indent.repeat(depth + 1)}`);
      if (kk === 'element') writeNode(text, k, depth + 1, indent, keep, out);
      else writeLeaf(text, k, kk, kkey, out);
    }
    if (indent !== null) out.push(`\n${indent.repeat(depth)}`);
  }
  out.push(`</${name}>`);
}

// ---------------------------------------------------------------------------------------------

interface Document {
  text: string;
  prolog: string[];
  root: XmlNode;
  epilog: string[];
}

/** Parses and checks a document; throws NotWellFormed (with position) or ToolError. */
export function readXml(input: string): Document {
  // Line ends are normalised as any XML processor does; a byte-order mark is dropped.
  const text = input.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  const prolog: string[] = [];
  const { next: rootStart, doctype } = scanMisc(text, 0, 'prolog', prolog);
  // The DOCTYPE is kept verbatim from the scan above; the validator and the parser see blanks
  // in its place (same offsets), so neither reads a DTD: no entity, internal or external, is
  // ever declared to them, let alone expanded.
  const masked = doctype ? text.slice(0, doctype[0]) + text.slice(doctype[0], doctype[1]).replace(/[^\n]/g, ' ') + text.slice(doctype[1]) : text;
  const verdict = XMLValidator.validate(masked, { allowBooleanAttributes: false });
  if (verdict !== true) {
    const { msg, line, col } = verdict.err;
    throw new NotWellFormed({ message: shorten(msg), line: line ?? 1, column: col ?? 1 });
  }
  let nodes: XmlNode[];
  try {
    nodes = new XMLParser(PARSER_OPTIONS).parse(masked) as XmlNode[];
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (/nested tags/i.test(message)) throw new ToolError('PARSE_ERROR', `XML nested deeper than ${XML_MAX_DEPTH} elements is not supported`);
    // The validator lets these through after the root element; an unclosed one runs to the end,
    // so it is the last one opened.
    if (/Pi Tag is not closed/i.test(message)) throw problemAt(text, text.lastIndexOf('<?'), 'Processing instruction is not closed');
    if (/Comment is not closed/i.test(message)) throw problemAt(text, text.lastIndexOf('<!--'), 'Comment is not closed');
    throw new ToolError('PARSE_ERROR', `Invalid XML: ${shorten(message)}`);
  }
  const root = nodes.find((n) => kindOf(n).kind === 'element');
  const rootMeta = root ? meta(root) : {};
  if (!root || rootMeta.startIndex !== rootStart || rootMeta.endIndex === undefined) {
    throw problemAt(text, rootStart, 'Could not read the document prolog');
  }
  const epilog: string[] = [];
  scanMisc(text, rootMeta.endIndex, 'epilog', epilog);
  checkTree(text, [root], doctype !== undefined);
  return { text, prolog, root, epilog };
}

/** Beautified (indent given) or minified (indent null) document. */
export function writeXml(doc: Document, indent: string | null): string {
  const out = new Output();
  const sep = indent === null ? '' : '\n';
  for (const item of doc.prolog) out.push(item + sep);
  writeNode(doc.text, doc.root, 0, indent, false, out);
  for (const item of doc.epilog) out.push(sep + item);
  return out.parts.join('');
}

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
    let doc: Document;
    try {
      doc = readXml(input);
    } catch (err) {
      if (!(err instanceof NotWellFormed)) throw err;
      const p = err.problem;
      if (action === 'validate') return { action, valid: false, error: p };
      throw new ToolError('PARSE_ERROR', `Invalid XML at line ${p.line}, column ${p.column}: ${p.message}`, { line: p.line, column: p.column });
    }
    if (action === 'validate') return { action, valid: true };
    return { action, valid: true, result: writeXml(doc, action === 'minify' ? null : ' '.repeat(indent)) };
  },
});
