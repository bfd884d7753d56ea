/**
 * image_convert's view: the result beside the input, each with its format, dimensions and bytes.
 * An input given as `data` is measured here (decoded from the arguments, shown from a data: URL);
 * one given as `url` was fetched by the server, and the frame fetches nothing: it names the URL.
 */
import { bytes, errorOf, h, root, showError, startView, type ToolResult } from '../shared/app.js';

let args: Record<string, unknown> = {};
startView('image', { input: (a) => (args = a), result: (r) => void render(r) });

interface Out {
  format: string;
  width: number;
  height: number;
  bytes: number;
}

async function render(r: ToolResult): Promise<void> {
  const err = errorOf(r);
  if (err) return showError(err);
  const o = r.structuredContent as unknown as Out;
  const block = r.content?.find((c) => c.type === 'image');
  const out = block && block.type === 'image' ? `data:${block.mimeType};base64,${block.data}` : undefined;
  const el = root();
  const input = typeof args.data === 'string' ? await measure(args.data) : undefined;
  el.append(
    h('h1', {}, `Converted to ${o.format.toUpperCase()}`),
    h('div', { class: 'grid', style: 'grid-template-columns:1fr 1fr' },
      side('Input', 'input', input ? { format: input.format, width: input.width, height: input.height, bytes: input.bytes } : undefined, input?.src, typeof args.url === 'string' ? args.url : undefined),
      side('Result', 'result', o, out),
    ),
    ...(input ? [h('p', { id: 'saving', class: 'muted' }, saving(input.bytes, o.bytes))] : []),
  );
}

function side(label: string, id: string, info: Out | undefined, src: string | undefined, url?: string): Element {
  return h('section', { class: 'card', id },
    h('h2', {}, label),
    src ? h('img', { src, alt: `${label} image`, style: 'max-width:100%;max-height:260px;display:block;margin-bottom:8px;background:repeating-conic-gradient(#ddd 0 25%,#fff 0 50%) 0 0/16px 16px' }) : null,
    info
      ? h('dl', {},
          h('dt', {}, 'Format'), h('dd', { class: 'format' }, info.format.toUpperCase()),
          h('dt', {}, 'Dimensions'), h('dd', { class: 'dimensions' }, `${info.width} × ${info.height} px`),
          h('dt', {}, 'Bytes'), h('dd', { class: 'bytes', 'data-bytes': info.bytes }, bytes(info.bytes)),
        )
      : h('p', { class: 'muted' }, url ? h('span', {}, 'Fetched by the server from ', h('code', {}, url)) : 'Unknown'),
  );
}

function saving(before: number, after: number): string {
  const pct = Math.round((1 - after / before) * 100);
  return pct >= 0 ? `${pct}% smaller than the input` : `${-pct}% larger than the input`;
}

/** Format (from the magic bytes), dimensions and byte count of a base64 image. */
async function measure(b64: string): Promise<{ format: string; width: number; height: number; bytes: number; src: string } | undefined> {
  const clean = b64.replace(/^data:[^,]*,/, '').replace(/\s+/g, '');
  let raw: string;
  try {
    raw = atob(clean.replace(/-/g, '+').replace(/_/g, '/'));
  } catch {
    return undefined;
  }
  const format = sniff(raw);
  const src = `data:image/${format === 'unknown' ? 'png' : format};base64,${clean}`;
  const img = new Image();
  img.src = src;
  try {
    await img.decode();
  } catch {
    return { format, width: 0, height: 0, bytes: raw.length, src };
  }
  return { format, width: img.naturalWidth, height: img.naturalHeight, bytes: raw.length, src };
}

function sniff(raw: string): string {
  if (raw.startsWith('\x89PNG')) return 'png';
  if (raw.startsWith('\xff\xd8\xff')) return 'jpeg';
  if (raw.startsWith('RIFF') && raw.slice(8, 12) === 'WEBP') return 'webp';
  if (raw.slice(4, 12) === 'ftypavif') return 'avif';
  if (raw.startsWith('GIF8')) return 'gif';
  return 'unknown';
}
