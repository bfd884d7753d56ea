import type { AnyTool } from '../../registry.js';
import { cronParse } from './cron-parse.js';
import { sqlFormat } from './sql-format.js';
import { timezoneConvert } from './timezone-convert.js';
import { xmlFormat } from './xml-format.js';

/** Text and time tools (issue 3). */
export const textTools: AnyTool[] = [xmlFormat as AnyTool, sqlFormat as AnyTool, cronParse as AnyTool, timezoneConvert as AnyTool];
