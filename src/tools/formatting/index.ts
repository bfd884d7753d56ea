import { defineFamily } from '../../core/family.js';
import { baseConvert } from './base-convert.js';
import { htmlEntity } from './html-entity.js';
import { jsonYamlConvert } from './json-yaml-convert.js';
import { cronParse } from './cron-parse.js';
import { sqlFormat } from './sql-format.js';
import { timezoneConvert } from './timezone-convert.js';
import { xmlFormat } from './xml-format.js';

/** Convert and pretty-print: pure functions of their input. */
export const formattingFamily = defineFamily({
  instructions: 'convert JSON⇄YAML, pretty-print or minify XML and SQL, explain cron expressions and list their next runs, convert number bases, encode/decode HTML entities, convert times between zones.',
  tag: { name: 'Formatting', description: 'Convert and pretty-print data: JSON/YAML, XML, SQL, HTML entities, number bases, time zones, cron expressions.' },
  tools: [jsonYamlConvert, baseConvert, htmlEntity, xmlFormat, sqlFormat, cronParse, timezoneConvert],
  errors: ['PARSE_ERROR'],
});
