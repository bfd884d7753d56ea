/**
 * A single-pass HTML scanner that collects what meta_extract and seo_check need, without
 * building a tree.
 *
 * Why not node-html-parser: its tree building is quadratic on unclosed elements (measured here:
 * 5,000 / 10,000 / 20,000 unclosed `<div>` take 146 / 497 / 1,798 ms, so a 2 MB page of them
 * would hold the event loop for minutes). This scanner keeps no element stack (only a depth
 * counter for `<svg>`/`<math>`, whose `<title>` is not the document title), and every step
 * moves forward, so its cost is linear in the input whatever the markup; see
 * html-scan.test.ts for the timings on hostile inputs and docs/seo.md for the figures.
 *
 * Tokenisation follows the HTML standard where it matters for these fields: comments (including
 * `<!-->`), doctype and bogus comments, raw-text elements (`script`, `style`, `textarea`,
 * `title`, `xmp`, `iframe`, `noembed`, `noframes`, `plaintext`) whose content is not markup,
 * quoted attribute values that may contain `>`, the first of duplicate attributes winning,
 * ASCII case-insensitive tag and attribute names, and character references in attribute values
 * and titles.
 */
import { decodeHTML, decodeHTMLAttribute } from 'entities';

/** The attributes of one start tag, names lower-case, first occurrence wins. */
export type Attrs = Map<string, string>;

export interface ScannedHtml {
  /** `<!doctype …>` seen before the first element. */
  doctype: boolean;
  /** `lang` of the first `<html>` start tag (null when absent). */
  htmlLang: string | null;
  /** Text of each document `<title>` (entities decoded, whitespace collapsed), in order. */
  titles: string[];
  /** Attributes of every `<meta>`, in order (at most MAX_METAS). */
  metas: Attrs[];
  /** Attributes of every `<link>` with a rel and an href, in order (at most MAX_LINKS). */
  links: Attrs[];
  /** href of the first `<base>` with one. */
  baseHref: string | null;
  /** Raw text of every `<script type="application/ld+json">` (at most MAX_JSON_LD). */
  jsonLd: string[];
  h1Count: number;
  imgCount: number;
  /** `<img>` without an `alt` attribute (alt="" marks a decorative image and is fine). */
  imgWithoutAlt: number;
}

export const MAX_METAS = 2_000;
export const MAX_LINKS = 2_000;
export const MAX_JSON_LD = 50;
/** Longest title, attribute value or script text kept (longer ones are cut). */
export const MAX_VALUE = 100_000;

/** Elements whose content is text up to the matching end tag. */
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title', 'xmp', 'iframe', 'noembed', 'noframes']);

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;
const isAlpha = (c: number): boolean => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);

/*
 * Searching is done with charCodeAt loops, not String.prototype.indexOf/startsWith: measured
 * here, once V8 had optimised the scanner, `indexOf(ch, from)` on a rope or sliced string cost
 * time proportional to the whole string on every call (2 MB of '<' took 17 s instead of 20 ms).
 */

/** Index of the first `code` at or after `from`, or -1. */
function findChar(s: string, code: number, from: number): number {
  const n = s.length;
  for (let k = from; k < n; k++) if (s.charCodeAt(k) === code) return k;
  return -1;
}

/** True when `needle` occurs in `s` at `at`. */
function matchAt(s: string, needle: string, at: number): boolean {
  if (at < 0 || at + needle.length > s.length) return false;
  for (let k = 0; k < needle.length; k++) if (s.charCodeAt(at + k) !== needle.charCodeAt(k)) return false;
  return true;
}

/** Index of the first `needle` at or after `from`, or -1 (needles are a few characters long). */
function findStr(s: string, needle: string, from: number): number {
  const first = needle.charCodeAt(0);
  const last = s.length - needle.length;
  for (let k = from; k <= last; k++) if (s.charCodeAt(k) === first && matchAt(s, needle, k)) return k;
  return -1;
}

/** ASCII-only lower-casing: keeps every index aligned with the original string. */
function asciiLower(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

export function collapseWhitespace(s: string): string {
  return s.replace(/[\t\n\f\r ]+/g, ' ').trim();
}

/**
 * Reads attributes from `pos` (just after the tag name) to the end of the tag.
 * Returns the index after `>` (or the input's length) and whether the tag was self-closing.
 * With `attrs` null the attributes are only skipped.
 */
function readAttributes(html: string, lower: string, pos: number, attrs: Attrs | null): { end: number; selfClosing: boolean } {
  const n = html.length;
  let i = pos;
  let selfClosing = false;
  while (i < n) {
    const c = html.charCodeAt(i);
    if (isSpace(c)) {
      i++;
      continue;
    }
    if (c === 0x3e /* > */) return { end: i + 1, selfClosing };
    if (c === 0x2f /* / */) {
      selfClosing = html.charCodeAt(i + 1) === 0x3e;
      i++;
      continue;
    }
    selfClosing = false;
    // Attribute name: up to whitespace, '/', '>' or '=' (a leading '=' belongs to the name).
    const nameStart = i;
    i++;
    while (i < n) {
      const d = html.charCodeAt(i);
      if (isSpace(d) || d === 0x2f || d === 0x3e || d === 0x3d) break;
      i++;
    }
    const name = lower.slice(nameStart, i);
    while (i < n && isSpace(html.charCodeAt(i))) i++;
    let value = '';
    if (html.charCodeAt(i) === 0x3d /* = */) {
      i++;
      while (i < n && isSpace(html.charCodeAt(i))) i++;
      const q = html.charCodeAt(i);
      if (q === 0x22 || q === 0x27) {
        const close = findChar(html, q, i + 1);
        const stop = close < 0 ? n : close;
        if (attrs) value = html.slice(i + 1, Math.min(stop, i + 1 + MAX_VALUE));
        i = close < 0 ? n : close + 1;
      } else {
        const vStart = i;
        while (i < n) {
          const d = html.charCodeAt(i);
          if (isSpace(d) || d === 0x3e) break;
          i++;
        }
        if (attrs) value = html.slice(vStart, Math.min(i, vStart + MAX_VALUE));
      }
    }
    if (attrs && !attrs.has(name)) attrs.set(name, value.includes('&') ? decodeHTMLAttribute(value) : value);
  }
  return { end: n, selfClosing };
}

/** Index of the end tag `</name` (followed by whitespace, '/' or '>') at or after `from`, or -1. */
function findEndTag(lower: string, name: string, from: number): number {
  const needle = `</${name}`;
  let at = findStr(lower, needle, from);
  while (at >= 0) {
    const c = lower.charCodeAt(at + needle.length);
    if (Number.isNaN(c) || isSpace(c) || c === 0x2f || c === 0x3e) return at;
    at = findStr(lower, needle, at + needle.length);
  }
  return -1;
}

/** Tags whose attributes are kept. Everything else is skipped over without allocation. */
const WANTED = new Set(['html', 'meta', 'link', 'base', 'script', 'img', 'title', 'h1']);

/** Scans an HTML document once. Linear time in `html.length`. */
export function scanHtml(html: string): ScannedHtml {
  const lower = asciiLower(html);
  const n = html.length;
  const out: ScannedHtml = {
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
  let seenHtml = false;
  let seenElement = false;
  let foreignDepth = 0; // inside <svg> or <math>
  let i = 0;
  while (i < n) {
    const lt = findChar(html, 0x3c, i);
    if (lt < 0) break;
    const c = html.charCodeAt(lt + 1);
    if (c === 0x21 /* ! */) {
      if (matchAt(html, '--', lt + 2)) {
        // <!--> and <!---> are complete (empty) comments.
        if (html.charCodeAt(lt + 4) === 0x3e) i = lt + 5;
        else if (matchAt(html, '->', lt + 4)) i = lt + 6;
        else {
          const end = findStr(html, '-->', lt + 4);
          i = end < 0 ? n : end + 3;
        }
        continue;
      }
      const end = findChar(html, 0x3e, lt + 2);
      if (!seenElement && matchAt(lower, 'doctype', lt + 2)) out.doctype = true;
      i = end < 0 ? n : end + 1;
      continue;
    }
    if (c === 0x3f /* ? */) {
      const end = findChar(html, 0x3e, lt + 2);
      i = end < 0 ? n : end + 1;
      continue;
    }
    if (c === 0x2f /* / */) {
      if (!isAlpha(html.charCodeAt(lt + 2))) {
        // '</>' is dropped; '</' + non-letter is a bogus comment up to '>'.
        const end = findChar(html, 0x3e, lt + 2);
        i = end < 0 ? n : end + 1;
        continue;
      }
      let j = lt + 3;
      while (j < n && !isSpace(html.charCodeAt(j)) && html.charCodeAt(j) !== 0x2f && html.charCodeAt(j) !== 0x3e) j++;
      const name = lower.slice(lt + 2, j);
      if ((name === 'svg' || name === 'math') && foreignDepth > 0) foreignDepth--;
      i = readAttributes(html, lower, j, null).end;
      continue;
    }
    if (!isAlpha(c)) {
      i = lt + 1; // a lone '<' is text
      continue;
    }
    let j = lt + 2;
    while (j < n && !isSpace(html.charCodeAt(j)) && html.charCodeAt(j) !== 0x2f && html.charCodeAt(j) !== 0x3e) j++;
    const name = lower.slice(lt + 1, j);
    seenElement = true;
    const attrs: Attrs | null = WANTED.has(name) ? new Map() : null;
    const { end, selfClosing } = readAttributes(html, lower, j, attrs);
    i = end;

    if (foreignDepth > 0) {
      if ((name === 'svg' || name === 'math') && !selfClosing) foreignDepth++;
      continue; // foreign content: no raw text, no document title
    }
    if ((name === 'svg' || name === 'math') && !selfClosing) {
      foreignDepth = 1;
      continue;
    }
    if (name === 'plaintext') break; // the rest of the document is text

    let text: string | null = null;
    if (RAW_TEXT.has(name)) {
      const close = findEndTag(lower, name, i);
      const stop = close < 0 ? n : close;
      if (name === 'title' || name === 'script') text = html.slice(i, Math.min(stop, i + MAX_VALUE));
      i = close < 0 ? n : readAttributes(html, lower, close + name.length + 2, null).end;
    }

    if (!attrs) continue;
    switch (name) {
      case 'html':
        if (!seenHtml) {
          seenHtml = true;
          const lang = attrs.get('lang');
          if (lang !== undefined) out.htmlLang = lang.trim();
        }
        break;
      case 'title':
        if (out.titles.length < 20) out.titles.push(collapseWhitespace(decodeHTML(text ?? '')));
        break;
      case 'meta':
        if (out.metas.length < MAX_METAS) out.metas.push(attrs);
        break;
      case 'link':
        if (out.links.length < MAX_LINKS && attrs.has('rel') && attrs.has('href')) out.links.push(attrs);
        break;
      case 'base':
        if (out.baseHref === null && attrs.has('href')) out.baseHref = attrs.get('href')!.trim();
        break;
      case 'script': {
        const type = (attrs.get('type') ?? '').split(';')[0]!.trim().toLowerCase();
        if (type === 'application/ld+json' && out.jsonLd.length < MAX_JSON_LD) out.jsonLd.push(text ?? '');
        break;
      }
      case 'img':
        out.imgCount++;
        if (!attrs.has('alt')) out.imgWithoutAlt++;
        break;
      case 'h1':
        out.h1Count++;
        break;
    }
  }
  return out;
}
