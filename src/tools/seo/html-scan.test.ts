import { describe, expect, it } from 'vitest';
import { scanHtml, type ScannedHtml } from './html-scan.js';
import { growth, GROWTH_TIMEOUT_MS, MAX_GROWTH } from '../../../test/growth.js';

const empty: ScannedHtml = {
  doctype: false,
  htmlLang: null,
  titles: [],
  metas: [],
  links: [],
  baseHref: null,
  jsonLd: [],
  h1Count: 0,
  imgCount: 0,
  imgWithoutAlt: 0,
};
const attrs = (o: Record<string, string>) => new Map(Object.entries(o));

describe('scanHtml', () => {
  it('collects the head fields of a small document', () => {
    const html = `<!DOCTYPE html><HTML Lang=" de "><head><base href="/x/"><Title>A &amp; B\n  c</Title>
      <meta name=description content='d "q"'><meta property="og:image" content="a.png">
      <link rel="icon" href="i.png"><link rel="stylesheet"><script type="application/ld+json">{"a":1}</script></head>
      <body><h1>h</h1><img src=a><img alt="" src=b></body></HTML>`;
    expect(scanHtml(html)).toStrictEqual({
      ...empty,
      doctype: true,
      htmlLang: 'de',
      titles: ['A & B c'],
      metas: [attrs({ name: 'description', content: 'd "q"' }), attrs({ property: 'og:image', content: 'a.png' })],
      links: [attrs({ rel: 'icon', href: 'i.png' })],
      baseHref: '/x/',
      jsonLd: ['{"a":1}'],
      h1Count: 1,
      imgCount: 2,
      imgWithoutAlt: 1,
    });
  });

  it('does not read markup inside comments, raw text elements or quoted attribute values', () => {
    const html = [
      '<!-- <title>c1</title> --><!--><h1><!---><h1>',
      '<script>var s = "<h1>x</h1><title>t</title>"; // </scriptx </script >',
      '<style>h1 { content: "<h1>" }</style>',
      '<textarea><img src=x></textarea><xmp><h1></xmp><noembed><h1></noembed>',
      '<div title="a > <h1> b" data-x=\'<img>\'><p>text</p></div>',
      '<svg><title>icon</title><svg><title>inner</title></svg><title>still svg</title></svg><math><title>m</title></math>',
      '<title>real</title>',
    ].join('');
    expect(scanHtml(html)).toStrictEqual({ ...empty, titles: ['real'], h1Count: 2 });
  });

  it('keeps the first of duplicate attributes and decodes character references', () => {
    const r = scanHtml('<meta name="a" NAME="b" content="x&quot;y&#65;&#x42;&notit;"><meta charset=utf-8/>');
    expect(r.metas).toStrictEqual([attrs({ name: 'a', content: 'x"yAB&notit;' /* legacy &not without ; is not decoded before a letter in attributes */ }), attrs({ charset: 'utf-8/' })]);
  });

  it('handles self-closing, valueless and unquoted attributes', () => {
    const r = scanHtml('<meta property=og:title content=Hello/><img alt src=x /><link rel=canonical href=/c>');
    expect(r).toStrictEqual({
      ...empty,
      metas: [attrs({ property: 'og:title', content: 'Hello/' })],
      links: [attrs({ rel: 'canonical', href: '/c' })],
      imgCount: 1,
    });
  });

  it('treats a stray < as text and stops at <plaintext>', () => {
    expect(scanHtml('a < b <3 </ > <? pi ?> <h1>x</h1><plaintext><h1>')).toStrictEqual({ ...empty, h1Count: 1 });
  });

  it('survives truncated input at every position', () => {
    const html = '<!doctype html><html lang="en"><title>T</title><meta name="x" content="y"><script type="application/ld+json">{}</script><!-- c --><img alt="a">';
    for (let i = 0; i <= html.length; i++) expect(() => scanHtml(html.slice(0, i))).not.toThrow();
    expect(scanHtml(html.slice(0, html.indexOf('</title>')))).toStrictEqual({ ...empty, doctype: true, htmlLang: 'en', titles: ['T'] });
  });

  it('counts only the first doctype before any element', () => {
    expect(scanHtml('<p><!doctype html>').doctype).toBe(false);
  });

  // node-html-parser needs 1.8 s for 20,000 unclosed <div> and grows quadratically; these 2 MB
  // inputs would take minutes there. Linear scanning does each in tens of milliseconds: each
  // pattern is timed at n and 4n units (test/growth.ts), not against a clock a loaded machine slows.
  it('scans 2 MB of hostile markup in linear time', async () => {
    const MB2 = 2 * 1024 * 1024;
    const hostile: Array<[prefix: string, unit: string]> = [
      ['', '<div>'],
      ['', '<svg>'],
      ['', '<h1>'],
      ['', '<img src=x>'],
      ['', '<meta property="og:image" content="a">'],
      ['', '<'],
      ['<a ', 'x=1 '],
      ['<a title="', 'x'],
      ['<!--', '-'],
      ['<script>', '</scrip'],
      ['<title>', '</titlex'],
      ['<title>', '&amp;'],
      ['<meta ', '='],
    ];
    for (const [prefix, unit] of hostile) {
      expect(() => scanHtml(prefix + unit.repeat(Math.floor(MB2 / unit.length)))).not.toThrow();
      const g = await growth((n) => scanHtml(prefix + unit.repeat(n)), { from: 1000, max: Math.floor((4 * MB2) / unit.length) });
      expect(g.ratio, `${prefix}${unit}…: ${g.text}`).toBeLessThan(MAX_GROWTH);
    }
  }, GROWTH_TIMEOUT_MS);
});
