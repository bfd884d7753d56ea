import fs from 'node:fs';
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { costRatio } from '../../../test/cpu-cost.js';
import { GROWTH_TIMEOUT_MS, MAX_GROWTH } from '../../../test/growth.js';
import { useToolHarness } from '../../../test/harness.js';
import { XML_MAX_DEPTH, XML_MAX_OUTPUT, xmlFormat } from './xml-format.js';

const t = useToolHarness();
const call = (input: Record<string, unknown>) => t.call(xmlFormat, input);
const result = async (input: string, action: 'beautify' | 'minify', indent?: number) =>
  (await call({ input, action, ...(indent ? { indent } : {}) })).result as string;
const failure = async (input: Record<string, unknown>) => {
  const { status: _status, ...error } = await t.failure(xmlFormat, input);
  return error;
};

const DOC = [
  '<?xml version="1.0" encoding="UTF-8"?>',
  '<!DOCTYPE note [ <!ENTITY x "hello"> ]>',
  '<!-- top -->',
  `<root a="1 &amp; 2" b='q"q'>`,
  '  <a>text &amp; &x; more</a>',
  '  <b><![CDATA[ <raw> & stuff',
  'line2 ]]></b><empty/>',
  '  <empty2></empty2>    <?pi some data?>',
  '  <mixed>hello <i>world</i> !</mixed>',
  '  <c><!-- inner --></c>',
  '<__proto__ constructor="x"><constructor/></__proto__>',
  '<w>   </w><pre xml:space="preserve">',
  '   <x/>',
  '</pre></root>',
  '<!-- end -->',
].join('\n');

describe('xml_format beautify and minify', () => {
  it('beautifies: markup re-indented, text and CDATA exactly as written, DOCTYPE/comments/PIs kept', async () => {
    expect(await call({ input: DOC })).toStrictEqual({
      action: 'beautify',
      valid: true,
      result: [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<!DOCTYPE note [ <!ENTITY x "hello"> ]>',
        '<!-- top -->',
        '<root a="1 &amp; 2" b="q&quot;q">',
        '  <a>text &amp; &x; more</a>',
        '  <b><![CDATA[ <raw> & stuff',
        'line2 ]]></b>',
        '  <empty/>',
        '  <empty2/>',
        '  <?pi some data?>',
        '  <mixed>hello <i>world</i> !</mixed>',
        '  <c>',
        '    <!-- inner -->',
        '  </c>',
        '  <__proto__ constructor="x">',
        '    <constructor/>',
        '  </__proto__>',
        '  <w>   </w>',
        '  <pre xml:space="preserve">',
        '   <x/>',
        '</pre>',
        '</root>',
        '<!-- end -->',
      ].join('\n'),
    });
  });

  it('minifies: formatting whitespace gone, everything else kept', async () => {
    expect(await call({ input: DOC, action: 'minify' })).toStrictEqual({
      action: 'minify',
      valid: true,
      result:
        '<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE note [ <!ENTITY x "hello"> ]><!-- top --><root a="1 &amp; 2" b="q&quot;q"><a>text &amp; &x; more</a>' +
        '<b><![CDATA[ <raw> & stuff\nline2 ]]></b><empty/><empty2/><?pi some data?><mixed>hello <i>world</i> !</mixed><c><!-- inner --></c>' +
        '<__proto__ constructor="x"><constructor/></__proto__><w>   </w><pre xml:space="preserve">\n   <x/>\n</pre></root><!-- end -->',
    });
  });

  it('puts the closing tag right after CDATA, the way a person would', async () => {
    expect(await result('<a>\n<b><![CDATA[x]]></b><c><![CDATA[\n  y\n]]></c></a>', 'beautify')).toBe(
      '<a>\n  <b><![CDATA[x]]></b>\n  <c><![CDATA[\n  y\n]]></c>\n</a>',
    );
  });

  it('honours indent and normalises line ends and a byte-order mark', async () => {
    expect(await result('\uFEFF<a>\r\n<b>x</b>\r<c/></a>', 'beautify', 4)).toBe('<a>\n    <b>x</b>\n    <c/>\n</a>');
  });

  it('keeps a DOCTYPE with quotes, comments and brackets in its internal subset', async () => {
    const doctype = `<!DOCTYPE r PUBLIC "-//X//DTD r//EN" 'r.dtd' [\n  <!-- a ] > comment -->\n  <?pi ]>?>\n  <!ENTITY e "]>">\n]>`;
    expect(await result(`${doctype}\n<r>&e;</r>`, 'minify')).toBe(`${doctype}<r>&e;</r>`);
  });

  it('never expands entities: billion laughs answers small, at the cost of the same document without the reference', async () => {
    const input = fs.readFileSync(new URL('../../../test/hostile/billion-laughs.xml', import.meta.url), 'utf8');
    // The same declarations, no reference to them: nothing to expand.
    const harmless = input.replace('<lolz>&lol9;</lolz>', '<lolz>lol99</lolz>');
    expect(harmless).not.toBe(input);
    for (const action of ['beautify', 'minify', 'validate'] as const) {
      // Expanded, this document is 10^9 strings: thousands of times the harmless one's CPU time.
      const c = await costRatio(() => call({ input, action }), () => call({ input: harmless, action }));
      expect(c.ratio, `${action}: ${c.text}`).toBeLessThan(MAX_GROWTH);
      const r = await call({ input, action });
      expect(JSON.stringify(r).length).toBeLessThan(2000);
      expect(r.valid).toBe(true);
      if (action !== 'validate') {
        expect(r.result).toContain('<lolz>&lol9;</lolz>');
        expect(r.result).not.toContain('lollol');
      }
    }
  }, GROWTH_TIMEOUT_MS);

  it('never reads external entities (XXE)', async () => {
    const input = '<?xml version="1.0"?>\n<!DOCTYPE foo [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>\n<foo>&xxe;</foo>';
    expect(await result(input, 'minify')).toBe('<?xml version="1.0"?><!DOCTYPE foo [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]><foo>&xxe;</foo>');
  });

  it(`formats ${XML_MAX_DEPTH} levels and refuses deeper nesting with a 422 for every action`, async () => {
    const ok = '<a>'.repeat(XML_MAX_DEPTH) + '</a>'.repeat(XML_MAX_DEPTH);
    expect(await result(ok, 'minify')).toBe('<a>'.repeat(XML_MAX_DEPTH - 1) + '<a/>' + '</a>'.repeat(XML_MAX_DEPTH - 1));
    const deep = '<a>'.repeat(10_000) + '</a>'.repeat(10_000);
    for (const action of ['beautify', 'minify', 'validate']) {
      expect(await failure({ input: deep, action })).toStrictEqual({ code: 'PARSE_ERROR', message: `XML nested deeper than ${XML_MAX_DEPTH} elements is not supported` });
    }
  });

  it('refuses a result that would blow past the output limit (400), while minify still works', async () => {
    const input = '<a>'.repeat(250) + '<b/>'.repeat(2200) + '</a>'.repeat(250);
    const e = await failure({ input, indent: 8 });
    const message = `The formatted result would exceed ${XML_MAX_OUTPUT} characters; try minify or a smaller indent`;
    expect(e).toStrictEqual({ code: 'INVALID_INPUT', message, details: [{ path: 'input', message }] });
    expect((await result(input, 'minify')).length).toBe(input.length);
  });

  it('formats 100k numeric character references without decoding them', async () => {
    const input = `<a>${'&#65;'.repeat(100_000)}</a>`;
    expect(await result(input, 'minify')).toBe(input);
  });
});

// Random documents: element trees with attributes, text, CDATA, comments, PIs and random
// formatting whitespace.
const name = fc.constantFrom('a', 'b', 'ns:c', 'd-e', '__proto__', 'constructor', 'x1');
const text = fc.constantFrom('hi', 'a &amp; b', ' spaced  out ', '&lt;tag&gt;', 'é', '\n  line\n');
const ws = fc.constantFrom('', ' ', '\n', '\n  ', '\t\n    ');
type Tree = string;
const tree: fc.Arbitrary<Tree> = fc.letrec<{ node: Tree }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.tuple(name, fc.constantFrom('', ' k="v"', " q='x\"y'", ' a="1" b="&amp;"')).map(([n, at]) => `<${n}${at}/>`),
    fc
      .tuple(name, fc.array(fc.tuple(ws, fc.oneof(tie('node'), text.map((t) => `T${t}`), fc.constantFrom('C<![CDATA[ <x> ]]>', 'M<!-- note -->', 'P<?pi data here?>'))), { maxLength: 4 }), ws)
      .map(([n, kids, tail]) => {
        const inner = kids.map(([w, k]) => w + (k.startsWith('<') ? k : k.slice(1))).join('');
        return `<${n}>${inner}${tail}</${n}>`;
      }),
  ),
})).node;

describe('xml_format properties', () => {
  test.prop([tree, fc.integer({ min: 1, max: 8 })], { numRuns: 150 })('minify(beautify(x)) = minify(x), and beautify is idempotent', async (doc, indent) => {
    const min = await result(doc, 'minify');
    const pretty = await result(doc, 'beautify', indent);
    expect(await result(pretty, 'minify')).toBe(min);
    expect(await result(pretty, 'beautify', indent)).toBe(pretty);
    expect(await result(min, 'minify')).toBe(min);
  });
});

describe('xml_format validate and errors', () => {
  it('answers valid:true without a result for good XML', async () => {
    expect(await call({ input: DOC, action: 'validate' })).toStrictEqual({ action: 'validate', valid: true });
  });

  const bad: Array<[string, string, number, number]> = [
    ['<a><b></a>', "Expected closing tag 'b' (opened in line 1, col 4) instead of closing tag 'a'.", 1, 7],
    ['<a>\n  <b>\n</c>\n</a>', "Expected closing tag 'b' (opened in line 2, col 3) instead of closing tag 'c'.", 3, 1],
    ['', 'The document has no root element', 1, 1],
    ['  \n', 'The document has no root element', 2, 1],
    ['hello', 'Text is not allowed before the root element', 1, 1],
    ['<a/>\n<!-- ok -->\n<?pi ok?>\n<!-- unclosed', 'Comment is not closed', 4, 1],
    ['<a x=1/>', "Attribute 'x' is without value.", 1, 4],
    ['<a x="1" x="2"/>', "Attribute 'x' is repeated.", 1, 10],
    ['<a> & </a>', "char '&' is not expected.", 1, 5],
    ['<a/><b/>', 'Only one root element is allowed', 1, 5],
    ['<a/>\ntext', 'Text is not allowed after the root element', 2, 1],
    ['<a/><!DOCTYPE a>', 'The DOCTYPE must come before the root element', 1, 5],
    ['<!DOCTYPE a><!DOCTYPE b><a/>', 'Only one DOCTYPE is allowed', 1, 13],
    ['<!DOCTYPE a [ "unclosed <a/>', 'DOCTYPE is not closed', 1, 1],
    ['<!-- a -- b --><a/>', 'A comment must not contain "--"', 1, 8],
    ['<!-- a ---><a/>', 'A comment must not end with "-"', 1, 8],
    ['<a>\n<!-- x -- y --></a>', 'A comment must not contain "--"', 2, 8],
    ['<a><?xml version="1.0"?></a>', 'The XML declaration is allowed only at the start of the document', 1, 4],
    ['<a/><?xml version="1.0"?>', 'The XML declaration is allowed only at the start of the document', 1, 5],
    ['<a/><?pi', 'Processing instruction is not closed', 1, 5],
    ['<a/><!-- x', 'Comment is not closed', 1, 5],
    ['<a>&foo;</a>', 'Entity &foo; is not declared (there is no DOCTYPE)', 1, 1],
    ['<r>\n  <a b="&nope;"/></r>', 'Entity &nope; is not declared (there is no DOCTYPE)', 2, 3],
    ['<r><a b="<"/></r>', 'Attribute b of <a> must not contain "<"', 1, 4],
    ['<a>]]></a>', 'Text must not contain "]]>" outside a CDATA section', 1, 1],
  ];
  it.each(bad)('%j is not well-formed', async (input, message, line, column) => {
    expect(await call({ input, action: 'validate' })).toStrictEqual({ action: 'validate', valid: false, error: { message, line, column } });
    for (const action of ['beautify', 'minify']) {
      expect(await failure({ input, action })).toStrictEqual({
        code: 'PARSE_ERROR',
        message: `Invalid XML at line ${line}, column ${column}: ${message}`,
        details: { line, column },
      });
    }
  });

  it('shortens an error message that quotes a huge tag name', async () => {
    const r = await call({ input: '<' + 'a'.repeat(100_000), action: 'validate' });
    expect((r.error as { message: string }).message.length).toBeLessThanOrEqual(301);
  });

  it('declared entities are fine with a DOCTYPE', async () => {
    expect(await call({ input: '<!DOCTYPE a [<!ENTITY e "x">]><a b="&e;">&e;</a>', action: 'validate' })).toStrictEqual({ action: 'validate', valid: true });
  });

  it.each([
    ['no input', {}, 'input'],
    ['a number as input', { input: 5 }, 'input'],
    ['input over 1,000,000 characters', { input: 'x'.repeat(1_000_001) }, 'input'],
    ['an unknown action', { input: '<a/>', action: 'pretty' }, 'action'],
    ['indent 0', { input: '<a/>', indent: 0 }, 'indent'],
    ['indent 9', { input: '<a/>', indent: 9 }, 'indent'],
    ['indent 1.5', { input: '<a/>', indent: 1.5 }, 'indent'],
    ['indent as a string', { input: '<a/>', indent: '2' }, 'indent'],
  ])('refuses %s with 400', async (_label, input, path) => {
    const e = await failure(input as Record<string, unknown>);
    expect([e.code, (e.details as Array<{ path: string }>).map((d) => d.path)]).toStrictEqual(['INVALID_INPUT', [path]]);
  });
});
