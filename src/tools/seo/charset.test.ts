import iconv from 'iconv-lite';
import { describe, expect, it } from 'vitest';
import { decodeHtml, metaCharset } from './charset.js';

const page = (head: string, body = '日本語') => `<!doctype html><html><head>${head}<title>${body}</title></head></html>`;

describe('decodeHtml', () => {
  it('uses the Content-Type charset first', () => {
    const text = page('', '中文页面');
    expect(decodeHtml(iconv.encode(text, 'gbk'), 'gbk')).toStrictEqual({ text, encoding: 'gbk', source: 'header' });
    // WHATWG label mapping: gb2312 means gbk.
    expect(decodeHtml(iconv.encode(text, 'gbk'), 'GB2312')).toStrictEqual({ text, encoding: 'gbk', source: 'header' });
  });

  it('falls back to <meta charset> and <meta http-equiv=content-type>', () => {
    const a = page('<meta charset="shift_jis">', 'ソフトウェア表示');
    expect(decodeHtml(iconv.encode(a, 'Shift_JIS'), null)).toStrictEqual({ text: a, encoding: 'shift_jis', source: 'meta' });
    const b = page('<meta http-equiv="Content-Type" content="text/html; charset=EUC-JP">', '日本語');
    expect(decodeHtml(iconv.encode(b, 'euc-jp'), null)).toStrictEqual({ text: b, encoding: 'euc-jp', source: 'meta' });
  });

  it('lets a byte order mark win over the header and strips it', () => {
    const text = page('<meta charset="windows-1252">', 'é');
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]);
    expect(decodeHtml(bytes, 'iso-8859-1')).toStrictEqual({ text, encoding: 'utf-8', source: 'bom' });
  });

  it('treats a meta that claims UTF-16 as UTF-8, and unknown labels as absent', () => {
    const text = page('<meta charset="utf-16">', 'é');
    expect(decodeHtml(Buffer.from(text), null)).toStrictEqual({ text, encoding: 'utf-8', source: 'meta' });
    const t2 = page('<meta charset="klingon">', 'é');
    expect(decodeHtml(Buffer.from(t2), 'x-unknown')).toStrictEqual({ text: t2, encoding: 'utf-8', source: 'default' });
  });

  it('maps latin1 to windows-1252 like browsers do', () => {
    expect(decodeHtml(Buffer.from([0x93, 0x61, 0x94]), 'iso-8859-1')).toStrictEqual({ text: '“a”', encoding: 'windows-1252', source: 'header' });
  });

  it('only looks at the first 8 KiB for a <meta charset>', () => {
    const late = `<!doctype html>${' '.repeat(9000)}<meta charset="shift_jis">`;
    expect(metaCharset(Buffer.from(late))).toBe(null);
    expect(metaCharset(Buffer.from('<meta name=x><meta charset=" GBK ">'))).toBe('GBK');
  });
});
