import { toJsonSchema, toolInputSchema } from '../src/json-schema.js';
import { buildOpenApi } from '../src/openapi/index.js';
import { createRegistry } from '../src/tools/index.js';

/** Every generated artifact of schemas/: file name → content. */
export function generatedSchemas(): Map<string, string> {
  const registry = createRegistry();
  const files = new Map<string, string>();
  for (const tool of registry.tools) {
    const doc = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      title: tool.title,
      description: tool.description,
      input: toolInputSchema(tool, 'draft-2020-12'),
      output: toJsonSchema(tool.output, 'output', 'draft-2020-12'),
    };
    files.set(`${tool.name}.json`, JSON.stringify(doc, null, 2) + '\n');
  }
  files.set('openapi.json', JSON.stringify(buildOpenApi(registry), null, 2) + '\n');
  return files;
}
