import { defineFamily } from '../../core/family.js';
import { baseConvert } from '../convert/base-convert.js';
import { htmlEntity } from '../convert/html-entity.js';
import { jsonYamlConvert } from '../convert/json-yaml-convert.js';
import { cronParse } from '../text/cron-parse.js';
import { sqlFormat } from '../text/sql-format.js';
import { timezoneConvert } from '../text/timezone-convert.js';
import { xmlFormat } from '../text/xml-format.js';

/** Convert and pretty-print: pure functions of their input. */
export const formattingFamily = defineFamily({
  name: 'formatting',
  tag: { name: 'Formatting', description: 'Convert and pretty-print data: JSON/YAML, XML, SQL, HTML entities, number bases, time zones, cron expressions.' },
  tools: [jsonYamlConvert, baseConvert, htmlEntity, xmlFormat, sqlFormat, cronParse, timezoneConvert],
  errors: ['PARSE_ERROR'],
});
