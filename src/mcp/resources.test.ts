import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineTool, Registry, type AnyTool } from '../registry.js';
import { narrow } from './toolsets.js';
import { createRegistry } from '../tools/index.js';
import { APP_MIME, declaresUi, UI_EXTENSION, ViewResources } from './resources.js';

const tool = (name: string, view?: string): AnyTool =>
  defineTool({
    name,
    ...(view !== undefined && { view }),
    title: name,
    description: name,
    input: z.object({}),
    output: z.object({}),
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    handler: () => ({}),
  }) as unknown as AnyTool;

describe('ViewResources', () => {
  const html = (name: string) => (name === 'missing' ? undefined : `<!doctype html><title>${name}</title>`);

  it('lists the views its tools name, once each, in src/views order; reads them; names them on the tools', () => {
    const v = new ViewResources(new Registry([tool('a_tool', 'seo'), tool('b_tool', 'qrcode'), tool('c_tool', 'seo'), tool('d_tool')]), html);
    expect(v.list.map((r) => r.uri)).toStrictEqual(['ui://devtoolbox/qrcode', 'ui://devtoolbox/seo']);
    expect(v.list[0]).toMatchObject({ name: 'qrcode', mimeType: APP_MIME });
    expect(v.toolMeta('a_tool')).toStrictEqual({ ui: { resourceUri: 'ui://devtoolbox/seo' } });
    expect(v.toolMeta('d_tool')).toBeUndefined();
    expect(v.read('ui://devtoolbox/seo')!.contents).toStrictEqual([
      { uri: 'ui://devtoolbox/seo', mimeType: APP_MIME, text: '<!doctype html><title>seo</title>', _meta: { ui: { csp: { connectDomains: [], resourceDomains: [] }, prefersBorder: true } } },
    ]);
    expect(v.read('ui://devtoolbox/table')).toBeUndefined();
    expect(v.read('ui://devtoolbox/../seo')).toBeUndefined();
  });

  it('a view that is not built is left out, and no tool names it', () => {
    const v = new ViewResources(new Registry([tool('a_tool', 'seo')]), () => undefined);
    expect([v.size, v.toolMeta('a_tool')]).toStrictEqual([0, undefined]);
  });

  it('a tool naming an unknown view fails at start-up', () => {
    expect(() => new ViewResources(new Registry([tool('a_tool', 'nope')]), html)).toThrow('Tool a_tool names an unknown view: nope');
  });

  it('a toolset selection serves only the views of its tools', () => {
    const all = createRegistry();
    const files = narrow(all, all.tools.filter((t) => t.name === 'file_process' || t.name === 'base_convert').map((t) => t.name));
    expect(new ViewResources(files, html).list.map((r) => r.uri)).toStrictEqual(['ui://devtoolbox/table']);
  });
});

describe('declaresUi', () => {
  it('needs the extension with our MIME type in mimeTypes', () => {
    expect(declaresUi({ extensions: { [UI_EXTENSION]: { mimeTypes: [APP_MIME] } } })).toBe(true);
    expect(declaresUi({ extensions: { [UI_EXTENSION]: { mimeTypes: ['text/html', APP_MIME] } } })).toBe(true);
    for (const caps of [undefined, null, {}, { extensions: {} }, { extensions: { [UI_EXTENSION]: {} } }, { extensions: { [UI_EXTENSION]: { mimeTypes: 'text/html;profile=mcp-app' } } }, { extensions: { [UI_EXTENSION]: { mimeTypes: ['text/html'] } } }, { extensions: [] }]) {
      expect(declaresUi(caps), JSON.stringify(caps)).toBe(false);
    }
  });
});
