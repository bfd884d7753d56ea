/**
 * XML rows: `<rows><row><col>value</col>…</row>…</rows>` and the common "repeated element
 * under a root" shape. The project's one XML reader (lib/xml-read) reads the document; entities
 * are decoded here, and only the five XML built-ins and numeric references are (no DOCTYPE
 * entity is ever expanded).
 */
import { decodeXML } from 'entities';
import { ToolError } from '../../errors.js';
import { attributeName, attributes, children, declarationEnd, elementName, kindOf, nestedTooDeep, NotWellFormed, readXml, type XmlDocument, type XmlNode } from '../../lib/xml-read.js';
import { cellText, typeCell } from './cells.js';
import { MAX_COLUMNS, MAX_OUTPUT_CHARS, MAX_ROWS, outputTooLarge, tooManyColumns, tooManyRows, type Table } from './table.js';

/** Deepest element nesting accepted. */
export const MAX_XML_DEPTH = 100;
/**
 * Most elements in one document: fast-xml-parser spends ≈ 4 µs and a few hundred bytes on each,
 * so 1M elements (200,000 rows of 4 columns) is ≈ 5 s of CPU; 10 MiB of `<a/>` would be 2.6M.
 */
export const MAX_XML_ELEMENTS = 1_000_000;

// Arrays made for repeated child elements (as opposed to values that merely are arrays).
const repeated = new WeakSet<unknown[]>();

interface XElement {
  name: string;
  attrs: Array<[string, string]>;
  children: XElement[];
  text: string;
}

/**
 * The caps, checked in one pass over the text before anything is built: elements, children of
 * one element (the rows) and depth. Without it, 850k rows were refused only after 3.3 s and
 * 1.1 GB of parse, and 3M unclosed `<a>` made the validator list every one of them. Comments,
 * CDATA, processing instructions, the DOCTYPE and quoted attribute values are skipped, so
 * markup-like text there counts for nothing; a malformed document is left to the reader.
 */
export function checkXmlShape(text: string): void {
  const n = text.length;
  const children = new Int32Array(MAX_XML_DEPTH + 2);
  let depth = 0;
  let elements = 0;
  let i = text.indexOf('<');
  while (i >= 0 && i < n) {
    const c = text.charCodeAt(i + 1);
    let next: number;
    if (c === 33 /* ! */) {
      if (text.startsWith('<!--', i)) next = skipPast(text, '-->', i + 4);
      else if (text.startsWith('<![CDATA[', i)) next = skipPast(text, ']]>', i + 9);
      else {
        const end = declarationEnd(text, i);
        next = end < 0 ? n : end;
      }
    } else if (c === 63 /* ? */) next = skipPast(text, '?>', i + 2);
    else if (c === 47 /* / */) {
      if (depth > 0) depth--;
      next = skipPast(text, '>', i + 2);
    } else if (c > 32 && c !== 60 && c !== 62) {
      if (++elements > MAX_XML_ELEMENTS) throw new ToolError('INVALID_INPUT', `Too many XML elements: more than ${MAX_XML_ELEMENTS} (limit ${MAX_XML_ELEMENTS})`, { limit: MAX_XML_ELEMENTS });
      if (++children[depth]! > MAX_ROWS) throw tooManyRows(`more than ${MAX_ROWS} elements under one element`);
      const end = tagEnd(text, i + 1);
      if (text.charCodeAt(end - 1) !== 47 /* / */) {
        if (++depth > MAX_XML_DEPTH) throw nestedTooDeep(MAX_XML_DEPTH);
        children[depth] = 0;
      }
      next = end + 1;
    } else next = i + 1;
    i = next >= n ? -1 : text.indexOf('<', next);
  }
}

function skipPast(text: string, close: string, from: number): number {
  const j = text.indexOf(close, from);
  return j < 0 ? text.length : j + close.length;
}

/** The offset of the `>` that ends a start tag, past quoted attribute values (or the text's end). */
function tagEnd(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 62) return i;
    if (c === 34 || c === 39) {
      const j = text.indexOf(c === 34 ? '"' : "'", i + 1);
      if (j < 0) return text.length;
      i = j;
    }
  }
  return text.length;
}

/** Parses XML text into a table (see the module comment for the shapes recognised). */
export function parseXml(text: string): Table {
  checkXmlShape(text);
  let doc: XmlDocument;
  try {
    doc = readXml(text, { maxDepth: MAX_XML_DEPTH, contentChecks: false });
  } catch (err) {
    throw err instanceof NotWellFormed ? err.toToolError() : err;
  }
  return tableFromElements(rowElements(toElements([doc.root], 0)[0]!));
}

/** The elements of a node list (depth is bounded by the reader); comments and PIs are left out. */
function toElements(nodes: XmlNode[], depth: number): XElement[] {
  const out: XElement[] = [];
  for (const node of nodes) {
    const { kind, key } = kindOf(node);
    if (kind !== 'element') continue;
    const attrs: Array<[string, string]> = [];
    for (const [a, v] of attributes(node)) attrs.push([decodeName(attributeName(a)), typeof v === 'string' ? decodeXML(v) : '']);
    const kids = children(node, key);
    let text = '';
    for (const kid of kids) {
      if (typeof kid['#text'] === 'string') text += decodeXML(kid['#text']);
      else if (Array.isArray(kid['#cdata'])) {
        for (const c of kid['#cdata'] as XmlNode[]) if (typeof c['#text'] === 'string') text += c['#text'];
      }
    }
    out.push({ name: decodeName(elementName(key)), attrs, children: depth < MAX_XML_DEPTH ? toElements(kids, depth + 1) : [], text });
  }
  return out;
}

/**
 * The elements that are the rows. The root's children with the most frequent name (the first
 * such name on a tie), after descending through single wrapper elements whose children repeat
 * (`<response><items><item/><item/></items></response>`). A root whose children are all leaves
 * with distinct names is itself one row.
 */
function rowElements(root: XElement): XElement[] {
  let node = root;
  for (;;) {
    if (node.children.length === 1) {
      const only = node.children[0]!;
      // Our own shape is never a wrapper: a lone <row> with repeated children is one row.
      const ownShape = node.name === 'rows' && only.name === 'row';
      if (!ownShape && repeatsName(only.children)) {
        node = only;
        continue;
      }
    }
    break;
  }
  if (node.children.length === 0) return node === root && root.attrs.length > 0 ? [root] : [];
  if (node === root && node.children.every((c) => c.children.length === 0 && c.attrs.length === 0) && !repeatsName(node.children) && node.children.length > 1) {
    return [root];
  }
  const counts = new Map<string, number>();
  let best = '';
  let bestCount = 0;
  for (const c of node.children) {
    const k = (counts.get(c.name) ?? 0) + 1;
    counts.set(c.name, k);
    if (k > bestCount) {
      best = c.name;
      bestCount = k;
    }
  }
  return node.children.filter((c) => c.name === best);
}

function repeatsName(els: XElement[]): boolean {
  const seen = new Set<string>();
  for (const e of els) {
    if (seen.has(e.name)) return true;
    seen.add(e.name);
  }
  return false;
}

function tableFromElements(rows: XElement[]): Table {
  if (rows.length > MAX_ROWS) throw tooManyRows(rows.length);
  const index = new Map<string, number>();
  const columns: string[] = [];
  const col = (name: string): number => {
    let i = index.get(name);
    if (i === undefined) {
      if (columns.length >= MAX_COLUMNS) throw tooManyColumns(`more than ${MAX_COLUMNS}`);
      i = columns.length;
      index.set(name, i);
      columns.push(name);
    }
    return i;
  };
  const sparse: Array<Map<number, unknown>> = [];
  for (const row of rows) {
    const values = new Map<number, unknown>();
    if (row.children.length === 0 && row.attrs.length === 0) {
      // A repeated leaf (`<item>a</item><item>b</item>`): one column named after the element.
      values.set(col(row.name), typeCell(row.text));
      sparse.push(values);
      continue;
    }
    const childNames = new Set(row.children.map((c) => c.name));
    // `<item id="1">Apple</item>`: the text is a column named after the element.
    if (row.children.length === 0 && row.text.trim() !== '') childNames.add(row.name);
    for (const [name, v] of row.attrs) values.set(col(childNames.has(name) ? `@${name}` : name), typeCell(v));
    if (row.children.length === 0 && row.text.trim() !== '') values.set(col(row.name), typeCell(row.text));
    for (const child of row.children) {
      const i = col(child.name);
      const v = elementValue(child);
      if (values.has(i)) {
        const prev = values.get(i);
        if (Array.isArray(prev) && repeated.has(prev)) prev.push(v);
        else {
          const list = [prev, v];
          repeated.add(list);
          values.set(i, list);
        }
      } else values.set(i, v);
    }
    sparse.push(values);
  }
  const n = columns.length;
  const records = sparse.map((values) => {
    const rec = new Array<unknown>(n).fill(null);
    for (const [i, v] of values) rec[i] = v;
    return rec;
  });
  return { columns, records };
}

/** A leaf's typed text; a nested element as a plain object (attributes, then children). */
function elementValue(el: XElement): unknown {
  if (el.children.length === 0 && el.attrs.length === 0) return typeCell(el.text);
  const o: Record<string, unknown> = {};
  for (const [k, v] of el.attrs) setOwn(o, k, typeCell(v));
  for (const c of el.children) {
    const v = elementValue(c);
    if (Object.prototype.hasOwnProperty.call(o, c.name)) {
      const prev = o[c.name];
      setOwn(o, c.name, Array.isArray(prev) && repeated.has(prev) ? (prev.push(v), prev) : markRepeated([prev, v]));
    } else setOwn(o, c.name, v);
  }
  if (el.children.length === 0 && el.text.trim() !== '') setOwn(o, '#text', typeCell(el.text));
  return o;
}

function markRepeated(list: unknown[]): unknown[] {
  repeated.add(list);
  return list;
}

function setOwn(o: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

// ---------------------------------------------------------------- generation

/**
 * An XML element name for any string, reversibly (the `_xHHHH_` convention of .NET's
 * XmlConvert.EncodeName and SQL Server): every character that may not appear in a name, and a
 * `_` that would read as such an escape, is written as `_xHHHH_`. `:` is escaped too, so no
 * name is taken for a namespace prefix. The empty name is `_x_`.
 */
export function encodeName(name: string): string {
  if (name === '') return '_x_';
  let out = '';
  for (let off = 0; off < name.length; ) {
    const cp = name.codePointAt(off)!;
    const ok = off === 0 ? isNameStart(cp) : isNameChar(cp);
    if (ok && !(cp === 95 && looksEscaped(name, off))) out += String.fromCodePoint(cp);
    else out += `_x${cp.toString(16).toUpperCase().padStart(cp > 0xffff ? 8 : 4, '0')}_`;
    off += cp > 0xffff ? 2 : 1;
  }
  return out;
}

const ESCAPE = /^_x(?:[0-9A-Fa-f]{8}|[0-9A-Fa-f]{4})_/;
const ESCAPES = /_x([0-9A-Fa-f]{8}|[0-9A-Fa-f]{4})_/g;

function looksEscaped(s: string, at: number): boolean {
  return s.charCodeAt(at + 1) === 120 && ESCAPE.test(s.slice(at, at + 12));
}

/** The inverse of {@link encodeName}; names without escapes come back unchanged. */
export function decodeName(name: string): string {
  if (name === '_x_') return '';
  if (!name.includes('_x')) return name;
  return name.replace(ESCAPES, (m, hex: string) => {
    const cp = parseInt(hex, 16);
    return cp <= 0x10ffff ? String.fromCodePoint(cp) : m;
  });
}

// XML 1.0 (5th edition) NameStartChar, without ':' and without the astral planes (which some
// parsers still refuse, so they are escaped).
function isNameStart(c: number): boolean {
  return (
    (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 ||
    (c >= 0xc0 && c <= 0xd6) || (c >= 0xd8 && c <= 0xf6) || (c >= 0xf8 && c <= 0x2ff) ||
    (c >= 0x370 && c <= 0x37d) || (c >= 0x37f && c <= 0x1fff) || (c >= 0x200c && c <= 0x200d) ||
    (c >= 0x2070 && c <= 0x218f) || (c >= 0x2c00 && c <= 0x2fef) || (c >= 0x3001 && c <= 0xd7ff) ||
    (c >= 0xf900 && c <= 0xfdcf) || (c >= 0xfdf0 && c <= 0xfffd)
  );
}

function isNameChar(c: number): boolean {
  return isNameStart(c) || c === 45 || c === 46 || (c >= 48 && c <= 57) || c === 0xb7 || (c >= 0x300 && c <= 0x36f) || (c >= 0x203f && c <= 0x2040);
}

/**
 * `<rows><row>…</row></rows>` for a table; every column appears in every row (null as an
 * empty element). Characters XML 1.0 cannot carry (most C0 controls) are refused with 400.
 */
export function generateXml(table: Table): string {
  const names = table.columns.map(encodeName);
  const parts: string[] = ['<?xml version="1.0" encoding="UTF-8"?>\n<rows>\n'];
  let size = parts[0]!.length;
  const n = names.length;
  for (let r = 0; r < table.records.length; r++) {
    const rec = table.records[r]!;
    let s = '  <row>\n';
    for (let j = 0; j < n; j++) {
      const name = names[j]!;
      const text = cellText(rec[j]);
      if (text === '') s += `    <${name}/>\n`;
      else s += `    <${name}>${escapeText(text, r, table.columns[j]!)}</${name}>\n`;
    }
    s += '  </row>\n';
    size += s.length;
    if (size > MAX_OUTPUT_CHARS) throw outputTooLarge();
    parts.push(s);
  }
  parts.push('</rows>\n');
  return parts.join('');
}

function escapeText(s: string, row: number, column: string): string {
  let out = '';
  let last = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let rep: string | undefined;
    if (c === 38) rep = '&amp;';
    else if (c === 60) rep = '&lt;';
    else if (c === 62) rep = '&gt;';
    else if (c === 13) rep = '&#13;'; // parsers normalise a raw CR away
    else if ((c < 32 && c !== 9 && c !== 10) || c === 0xfffe || c === 0xffff) {
      throw new ToolError('INVALID_INPUT', `Row ${row + 1}, column "${column}" holds U+${c.toString(16).toUpperCase().padStart(4, '0')}, which XML 1.0 cannot represent`, {
        row: row + 1,
        column,
      });
    }
    if (rep !== undefined) {
      out += s.slice(last, i) + rep;
      last = i + 1;
    }
  }
  return last === 0 ? s : out + s.slice(last);
}
