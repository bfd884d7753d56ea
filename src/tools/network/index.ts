import { defineFamily } from '../../core/family.js';
import { ipCalc } from './ip-calc.js';
import { timeCalc } from './time-calc.js';
import { urlParse } from './url-parse.js';

/**
 * Address and instant arithmetic that agents get wrong in their heads: CIDR blocks, URLs as
 * browsers parse them, dates across DST. time_calc lives here rather than in formatting so that
 * a client's existing `formatting` toolset lists exactly what it listed before.
 */
export const networkFamily = defineFamily({
  instructions: 'compute IPv4/IPv6 subnets and CIDR membership, parse URLs as browsers do (WHATWG), and do date-time arithmetic across time zones and DST.',
  tag: { name: 'Network', description: 'IP and CIDR arithmetic, WHATWG URL parsing, date-time arithmetic in IANA zones.' },
  tools: [ipCalc, urlParse, timeCalc],
  errors: ['PARSE_ERROR'],
});
