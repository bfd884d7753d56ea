import { fc, test } from '@fast-check/vitest';
import { XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { ToolError } from '../../errors.js';
import { decodeName, encodeName, generateXml, parseXml } from './xml.js';

describe('XML element names', () => {
  it('escapes what a name cannot hold, the _xHHHH_ way', () => {
    const names = ['id', 'first name', '1st', 'a:b', '', '_x0041_', 'naïve', '😀', 'x-y.z', '-lead', '__proto__', 'a&b'];
    expect(names.map(encodeName)).toStrictEqual([
      'id', 'first_x0020_name', '_x0031_st', 'a_x003A_b', '_x_', '_x005F_x0041_', 'naïve', '_x0001F600_', 'x-y.z', '_x002D_lead', '__proto__', 'a_x0026_b',
    ]);
  });

  test.prop([fc.string({ unit: 'binary', maxLength: 20 })])('any key survives encode → XML → decode', (name) => {
    const encoded = encodeName(name);
    expect(XMLValidator.validate(`<${encoded}/>`)).toBe(true);
    expect(decodeName(encoded)).toBe(name);
  });
});

describe('parseXml shapes', () => {
  it('descends through a single wrapper to the repeated records', () => {
    const t = parseXml('<response><items><item><a>1</a></item><item><a>2</a><b>x</b></item></items></response>');
    expect(t).toStrictEqual({ columns: ['a', 'b'], records: [[1, null], [2, 'x']] });
  });

  it('never takes a lone <row> of <rows> for a wrapper', () => {
    expect(parseXml('<rows><row><tag>a</tag><tag>b</tag></row></rows>')).toStrictEqual({ columns: ['tag'], records: [[['a', 'b']]] });
  });

  it('reads a root of distinct leaves as one row, and repeated leaves as a one-column table', () => {
    expect(parseXml('<config><host>db</host><port>5432</port></config>')).toStrictEqual({ columns: ['host', 'port'], records: [['db', 5432]] });
    expect(parseXml('<tags><tag>a</tag><tag>b</tag></tags>')).toStrictEqual({ columns: ['tag'], records: [['a'], ['b']] });
  });

  it('keeps attributes as columns, text beside attributes, repeated and nested children', () => {
    const t = parseXml('<fruits><fruit id="1" fruit="x">Apple</fruit><fruit id="2"><tag>a</tag><tag>b</tag><dim w="2"><h>3</h></dim></fruit></fruits>');
    expect(JSON.parse(JSON.stringify(t))).toStrictEqual({
      columns: ['id', '@fruit', 'fruit', 'tag', 'dim'],
      records: [
        [1, 'x', 'Apple', null, null],
        [2, null, null, ['a', 'b'], { w: 2, h: 3 }],
      ],
    });
  });

  it('a DOCTYPE declaring an external entity or holding a processing instruction was refused; its references now stay text', () => {
    const xxe = '<?xml version="1.0"?>\n<!DOCTYPE rows [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>\n<rows><row><a>&xxe;</a></row></rows>';
    expect(parseXml(xxe)).toStrictEqual({ columns: ['a'], records: [['&xxe;']] });
    expect(parseXml('<!DOCTYPE r [\n  <?pi x?>\n  <!ENTITY e "]>">\n]>\n<r><a>&e;</a><a>2</a></r>')).toStrictEqual({ columns: ['a'], records: [['&e;'], [2]] });
  });

  it('an empty document was refused at "column undefined": the error now has a column, and so does a second root', () => {
    expect(() => parseXml('')).toThrow(new ToolError('PARSE_ERROR', 'Invalid XML at line 1, column 1: The document has no root element', { line: 1, column: 1 }));
    expect(() => parseXml('<rows/>\n<rows/>')).toThrow(new ToolError('PARSE_ERROR', 'Invalid XML at line 2, column 1: Only one root element is allowed', { line: 2, column: 1 }));
  });

  it('picks the most frequent child name under the root, ignoring others', () => {
    const t = parseXml('<feed><title>t</title><entry><id>1</id></entry><entry><id>2</id></entry></feed>');
    expect(t).toStrictEqual({ columns: ['id'], records: [[1], [2]] });
  });
});

describe('generateXml', () => {
  it('escapes markup and keeps a CR as a character reference', () => {
    expect(generateXml({ columns: ['v'], records: [['a<b>&c\r\nd']] })).toBe(
      '<?xml version="1.0" encoding="UTF-8"?>\n<rows>\n  <row>\n    <v>a&lt;b&gt;&amp;c&#13;\nd</v>\n  </row>\n</rows>\n',
    );
    expect(parseXml(generateXml({ columns: ['v'], records: [['a<b>&c\r\nd  ']] }))).toStrictEqual({ columns: ['v'], records: [['a<b>&c\r\nd  ']] });
  });
});
