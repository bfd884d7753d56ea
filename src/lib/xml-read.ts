/**
 * The one XML reader (xml_format and file_process): fast-xml-parser builds the tree, and this
 * module adds what it leaves out, so every tool reads XML with the same safety:
 *
 * - no entity is ever expanded: the DOCTYPE is found by {@link declarationEnd} and blanked
 *   before the validator and the parser see the text, so no entity (internal or external) is
 *   declared to them, and `processEntities` is off (billion laughs and XXE stay literal text);
 * - element names go through the parser behind a mark no XML name contains, and attribute names
 *   behind `@_`, so `__proto__` or `constructor` are plain data (the parser refuses them otherwise);
 * - nesting is capped by the parser (`maxNestedTags`), the cap being the caller's;
 * - a document that is not well-formed is refused with a line and a column ({@link NotWellFormed}).
 */
import { XMLParser, XMLValidator, type X2jOptions } from 'fast-xml-parser';
import { cutText, ToolError } from '../errors.js';
import { lineColumn } from './line-column.js';

/** Options of {@link readXml}. */
export interface XmlReadOptions {
  /** Deepest element nesting read; a deeper document is a 422 PARSE_ERROR. */
  maxDepth: number;
  /**
   * Also check the content rules fast-xml-parser's validator leaves out (entities declared, no
   * `<` in an attribute value, no `]]>` in text, comments and declarations in the tree). On by
   * default; file_process turns it off, because it reads tables from XML as written and keeps
   * an unknown entity reference as text (its tests hold it to that).
   */
  contentChecks?: boolean;
}

/** A node of fast-xml-parser's `preserveOrder` tree. */
export type XmlNode = Record<string, unknown>;

/** A document: its normalised text, what comes before and after the root (verbatim), and the root. */
export interface XmlDocument {
  text: string;
  prolog: string[];
  root: XmlNode;
  epilog: string[];
}

/** Where and why the document is not well-formed. */
export interface XmlProblem {
  message: string;
  line: number;
  column: number;
}

/** Thrown by {@link readXml} for a document that is not well-formed. */
export class NotWellFormed extends Error {
  constructor(readonly problem: XmlProblem) {
    super(problem.message);
  }

  /** The 422 every tool answers for it. */
  toToolError(): ToolError {
    const { line, column, message } = this.problem;
    return new ToolError('PARSE_ERROR', `Invalid XML at line ${line}, column ${column}: ${message}`, { line, column });
  }
}

// The mark in front of element names: no XML name contains U+0001. The parser may apply it
// twice (self-closing tags), so every leading one is stripped.
const NAME_MARK = '\u0001';

function parserOptions(maxDepth: number): X2jOptions {
  return {
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
    maxNestedTags: maxDepth,
    transformTagName: (name) => NAME_MARK + name,
  };
}

// One parser per depth cap (two in practice): a parser keeps no state between documents.
const parsers = new Map<number, XMLParser>();
function parserFor(maxDepth: number): XMLParser {
  let p = parsers.get(maxDepth);
  if (!p) parsers.set(maxDepth, (p = new XMLParser(parserOptions(maxDepth))));
  return p;
}

const META = XMLParser.getMetaDataSymbol() as unknown as symbol;
interface Meta {
  startIndex?: number;
  endIndex?: number;
}

/** The 422 for a document nested deeper than a reader's cap (the same words wherever XML is read). */
export function nestedTooDeep(maxDepth: number): ToolError {
  return new ToolError('PARSE_ERROR', `XML nested deeper than ${maxDepth} elements is not supported`);
}

function problemAt(text: string, offset: number, message: string): NotWellFormed {
  return new NotWellFormed({ message, ...lineColumn(text, offset) });
}

// A message can quote a whole huge tag name: 300 characters say enough.
const shorten = (message: string): string => cutText(message, 301);

const isXmlSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r';
/** Text that is only XML white space. */
export const BLANK = /^[ \t\n\r]*$/;
const BUILTIN_ENTITY = /^(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+)$/;

// ---------------------------------------------------------------------------------------------
// Prolog and epilog: what surrounds the root element. The parser drops the DOCTYPE and keeps
// comments without positions, so the top level is read here, verbatim.

/**
 * End (exclusive) of the markup declaration (`<!DOCTYPE …>` or another `<!…>`) starting at
 * `start`, past its bracketed internal subset, quoted strings, comments and processing
 * instructions; -1 when it is not closed. The only DOCTYPE skipper: whatever scans XML text
 * skips a DOCTYPE with it.
 */
export function declarationEnd(text: string, start: number): number {
  let depth = 0;
  for (let j = start + 2; j < text.length; j++) {
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
      const end = declarationEnd(text, i);
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

/** What a tree node is. */
export type Kind = 'element' | 'text' | 'comment' | 'cdata' | 'pi';

/** The kind of a node and the key that holds its content. */
export function kindOf(node: XmlNode): { kind: Kind; key: string } {
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

/** An element's name as written, from its key. */
export const elementName = (key: string) => key.replace(/^\u0001+/, '');
/** The child nodes under `key`. */
export const children = (node: XmlNode, key: string) => (node[key] as XmlNode[] | undefined) ?? [];
/** The text of a comment, CDATA section or processing instruction node. */
export const innerText = (node: XmlNode, key: string) => String(children(node, key)[0]?.['#text'] ?? '');
/** An element's attributes as `[name, value]`, each name behind its `@_` mark. */
export const attributes = (node: XmlNode) => Object.entries((node[':@'] as Record<string, unknown> | undefined) ?? {});
/** An attribute's name without its mark. */
export const attributeName = (key: string) => key.slice(2);
/** Where a node starts and ends in the document text. */
export const meta = (node: XmlNode) => (node as Record<symbol, Meta | undefined>)[META] ?? {};

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
        if (value.includes('<')) throw problemAt(text, start, `Attribute ${attributeName(name)} of <${elementName(key)}> must not contain "<"`);
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
// The reader.

function parseTree(text: string, masked: string, maxDepth: number): XmlNode[] {
  const verdict = XMLValidator.validate(masked, { allowBooleanAttributes: false });
  if (verdict !== true) {
    const { msg, line, col } = verdict.err;
    throw new NotWellFormed({ message: shorten(msg), line: line ?? 1, column: col ?? 1 });
  }
  try {
    return parserFor(maxDepth).parse(masked) as XmlNode[];
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (/nested tags/i.test(message)) throw nestedTooDeep(maxDepth);
    // The validator lets these through after the root element; an unclosed one runs to the end,
    // so it is the last one opened.
    if (/Pi Tag is not closed/i.test(message)) throw problemAt(text, text.lastIndexOf('<?'), 'Processing instruction is not closed');
    if (/Comment is not closed/i.test(message)) throw problemAt(text, text.lastIndexOf('<!--'), 'Comment is not closed');
    throw new ToolError('PARSE_ERROR', `Invalid XML: ${shorten(message)}`);
  }
}

/**
 * Parses and checks a document. Throws {@link NotWellFormed} (with its position) for a
 * document that is not well-formed, and a ToolError for one nested deeper than `maxDepth`.
 */
export function readXml(input: string, { maxDepth, contentChecks = true }: XmlReadOptions): XmlDocument {
  // Line ends are normalised as any XML processor does; a byte-order mark is dropped.
  const text = input.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  const prolog: string[] = [];
  const { next: rootStart, doctype } = scanMisc(text, 0, 'prolog', prolog);
  // The DOCTYPE is kept verbatim in the prolog; the validator and the parser see blanks in its
  // place (same offsets), so neither reads a DTD.
  const masked = doctype ? text.slice(0, doctype[0]) + text.slice(doctype[0], doctype[1]).replace(/[^\n]/g, ' ') + text.slice(doctype[1]) : text;
  const nodes = parseTree(text, masked, maxDepth);
  const root = nodes.find((n) => kindOf(n).kind === 'element');
  const rootMeta = root ? meta(root) : {};
  if (!root || rootMeta.startIndex !== rootStart || rootMeta.endIndex === undefined) {
    throw problemAt(text, rootStart, 'Could not read the document prolog');
  }
  const epilog: string[] = [];
  scanMisc(text, rootMeta.endIndex, 'epilog', epilog);
  if (contentChecks) checkTree(text, [root], doctype !== undefined);
  return { text, prolog, root, epilog };
}
