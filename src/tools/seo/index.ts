import { defineFamily } from '../../core/family.js';
import { metaExtract } from './meta-extract.js';
import { seoCheck } from './seo-check.js';

/** Fetch a public page and read or grade it. */
export const seoFamily = defineFamily({
  instructions: 'fetch a public web page and read its metadata (title, description, Open Graph, Twitter, JSON-LD) or score its on-page SEO.',
  tag: {
    name: 'SEO',
    description: 'Fetch a public page and read its metadata or grade it. Fetching follows the URL rules in docs/fetching.md (public http(s) addresses only).',
  },
  tools: [metaExtract, seoCheck],
});
