import { baseConvert } from './base-convert.js';
import { htmlEntity } from './html-entity.js';
import { jsonYamlConvert } from './json-yaml-convert.js';

export const convertTools = [jsonYamlConvert, baseConvert, htmlEntity];
