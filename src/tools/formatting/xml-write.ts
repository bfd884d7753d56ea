/** Writing XML for xml_format: beautify (indent) or minify, mixed content and xml:space kept. */
import { ToolError } from '../../errors.js';
import { attributeName, attributes, BLANK, children, elementName, innerText, kindOf, meta, type Kind, type XmlDocument, type XmlNode } from '../../lib/xml-read.js';

/** Largest formatted result (characters): deep documents at indent 8 grow fast. */
export const XML_MAX_OUTPUT = 4_000_000;

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
  for (const [k, v] of attributes(node)) s += ` ${attributeName(k)}="${String(v).replace(/"/g, '&quot;')}"`;
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

/** Beautified (indent given) or minified (indent null) document. */
export function writeXml(doc: XmlDocument, indent: string | null): string {
  const out = new Output();
  const sep = indent === null ? '' : '\n';
  for (const item of doc.prolog) out.push(item + sep);
  writeNode(doc.text, doc.root, 0, indent, false, out);
  for (const item of doc.epilog) out.push(sep + item);
  return out.parts.join('');
}
