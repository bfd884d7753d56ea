import { defineFamily } from '../../core/family.js';
import { jsonPatch } from './json-patch.js';
import { jsonQuery } from './json-query.js';
import { jsonSchemaValidate } from './json-schema-validate.js';
import { regexTest } from './regex-test.js';
import { textDiff } from './text-diff.js';

/** Query, compare, patch and check data: what agents get wrong when done in their heads. */
export const dataFamily = defineFamily({
  instructions: 'query JSON (JSONPath RFC 9535, JMESPath), diff and apply JSON Patch (RFC 6902), diff two texts, test a JavaScript regex with groups and replacement, validate JSON against a JSON Schema.',
  tag: { name: 'Data', description: 'Query, compare, patch and validate data: JSONPath/JMESPath queries, JSON Patch, text diffs, regular expressions, JSON Schema.' },
  tools: [jsonQuery, jsonPatch, textDiff, regexTest, jsonSchemaValidate],
  errors: ['PARSE_ERROR'],
});
