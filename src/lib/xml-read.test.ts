import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ToolError } from '../errors.js';
import { attributeName, attributes, children, declarationEnd, elementName, kindOf, NotWellFormed, readXml, type XmlNode } from './xml-read.js';

const hostile = (name: string) => fs.readFileSync(new URL(`../../test/hostile/${name}`, import.meta.url), 'utf8');

/** The element tree as `[name, attributes, children]`, text nodes as strings (comments, PIs left out). */
function shape(node: XmlNode): unknown {
  const { kind, key } = kindOf(node);
  if (kind === 'text') return String(node[key]);
  if (kind !== 'element') return undefined;
  const attrs = attributes(node).map(([k, v]) => [attributeName(k), v]);
  return [elementName(key), attrs, children(node, key).map(shape).filter((c) => c !== undefined)];
}

function problem(input: string, contentChecks?: boolean): unknown {
  try {
    readXml(input, { maxDepth: 10, contentChecks });
  } catch (err) {
    if (err instanceof NotWellFormed) return err.problem;
    throw err;
  }
  throw new Error('expected NotWellFormed');
}

describe('readXml', () => {
  it('keeps DOCTYPE entities as written: billion laughs and XXE are never expanded nor read', () => {
    const lol = readXml(hostile('billion-laughs.xml'), { maxDepth: 10 });
    expect(shape(lol.root)).toStrictEqual(['lolz', [], ['&lol9;']]);
    expect(lol.prolog[1]).toMatch(/^<!DOCTYPE lolz \[/);
    const xxe = readXml(hostile('xxe.xml'), { maxDepth: 10 });
    expect(shape(xxe.root)).toStrictEqual(['foo', [], ['&xxe;']]);
  });

  it('reads __proto__ and constructor as plain names, and pollutes nothing', () => {
    const doc = readXml('<__proto__ constructor="1" __proto__="2"><constructor/><toString>x</toString></__proto__>', { maxDepth: 10 });
    expect(shape(doc.root)).toStrictEqual(['__proto__', [['constructor', '1'], ['__proto__', '2']], [['constructor', [], []], ['toString', [], ['x']]]]);
    expect(Object.getPrototypeOf(doc.root[':@'])).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).constructor).toBe(Object);
  });

  it('answers the caller\'s depth cap with a 422', () => {
    expect(shape(readXml('<a>'.repeat(10) + '</a>'.repeat(10), { maxDepth: 10 }).root)).toBeInstanceOf(Array);
    expect(() => readXml('<a>'.repeat(20) + '</a>'.repeat(20), { maxDepth: 10 })).toThrow(new ToolError('PARSE_ERROR', 'XML nested deeper than 10 elements is not supported'));
  });

  it('says where a document is not well-formed, on the normalised text', () => {
    expect(problem('\uFEFF<a>\r\n<b></a>')).toStrictEqual({ message: "Expected closing tag 'b' (opened in line 2, col 1) instead of closing tag 'a'.", line: 2, column: 4 });
    expect(problem('<a/>\r\n<b/>')).toStrictEqual({ message: 'Only one root element is allowed', line: 2, column: 1 });
    expect(new NotWellFormed({ message: 'm', line: 2, column: 3 }).toToolError()).toStrictEqual(new ToolError('PARSE_ERROR', 'Invalid XML at line 2, column 3: m', { line: 2, column: 3 }));
  });

  it('checks content only when asked: file_process reads "<" in an attribute and an undeclared entity as written', () => {
    expect(problem('<a b="<">&nbsp;</a>')).toStrictEqual({ message: 'Attribute b of <a> must not contain "<"', line: 1, column: 1 });
    expect(shape(readXml('<a b="<">&nbsp;</a>', { maxDepth: 10, contentChecks: false }).root)).toStrictEqual(['a', [['b', '<']], ['&nbsp;']]);
    // The structure around the root is checked either way.
    expect(problem('<a/>text', false)).toStrictEqual({ message: 'Text is not allowed after the root element', line: 1, column: 5 });
  });

  it('cuts a long message on a whole character', () => {
    const p = problem(`<a><${'😀'.repeat(1000)}/></a>`) as { message: string };
    expect(p.message.length).toBeLessThanOrEqual(301);
    expect(p.message).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
  });
});

describe('declarationEnd', () => {
  it('skips an internal subset with quotes, comments and processing instructions holding ">" and "]"', () => {
    const doctype = `<!DOCTYPE r PUBLIC "-//X//DTD r//EN" 'r.dtd' [\n  <!-- a ] > comment -->\n  <?pi ]>?>\n  <!ENTITY e "]>">\n]>`;
    expect(declarationEnd(`${doctype}<r/>`, 0)).toBe(doctype.length);
    expect(declarationEnd(`x<!ELEMENT a (b)><a/>`, 1)).toBe(17);
  });

  it('answers -1 for a declaration that is not closed', () => {
    expect(declarationEnd('<!DOCTYPE a [ "unclosed <a/>', 0)).toBe(-1);
    expect(declarationEnd('<!DOCTYPE a [ <!-- open <a/>', 0)).toBe(-1);
  });
});
