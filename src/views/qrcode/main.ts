/**
 * qrcode_generate's view: the code at full resolution (the PNG block every result carries), its
 * content, download as PNG or SVG, and a re-render with another size, colour or error-correction
 * level — an app-initiated tools/call of qrcode_generate through the host.
 */
import { bytes, errorOf, h, root, showError, startView, type ToolResult } from '../shared/app.js';

/** The arguments of the code on screen (what a re-render starts from). */
let args: Record<string, unknown> = {};
let png: string | undefined;
let svg: string | undefined;

const app = startView('qrcode', {
  input: (a) => (args = { ...a }),
  result: render,
});

function render(r: ToolResult): void {
  const err = errorOf(r);
  if (err) return showError(err);
  const image = r.content?.find((c) => c.type === 'image');
  png = image && image.type === 'image' ? image.data : undefined;
  const text = r.content?.find((c) => c.type === 'text' && c.text.trimStart().startsWith('<'));
  svg = text && text.type === 'text' ? text.text : undefined;
  const s = (r.structuredContent ?? {}) as { size?: number; bytes?: number; format?: string };
  const size = Number(args.size ?? s.size ?? 256);
  const el = root();
  el.append(
    h('h1', {}, 'QR code'),
    png ? h('img', { id: 'qr', src: `data:image/png;base64,${png}`, width: size, height: size, alt: `QR code for ${String(args.content ?? '')}`, style: 'image-rendering:pixelated;max-width:100%;height:auto;align-self:flex-start' }) : h('p', { class: 'muted' }, 'No image in the result'),
    h('dl', {},
      h('dt', {}, 'Content'), h('dd', { id: 'content', class: 'mono' }, String(args.content ?? '—')),
      h('dt', {}, 'Size'), h('dd', { id: 'size' }, `${size} × ${size} px`),
      h('dt', {}, 'Error correction'), h('dd', { id: 'ec' }, String(args.ecLevel ?? 'M')),
      h('dt', {}, 'Colours'), h('dd', {}, `#${String(args.fgColor ?? '000000').replace('#', '')} on #${String(args.bgColor ?? 'ffffff').replace('#', '')}`),
      s.bytes !== undefined ? h('dt', {}, `Bytes (${s.format})`) : null, s.bytes !== undefined ? h('dd', {}, bytes(s.bytes)) : null,
    ),
    h('div', { class: 'row' },
      h('button', { id: 'download-png', onclick: () => void download('png') }, 'Download PNG'),
      h('button', { id: 'download-svg', onclick: () => void download('svg') }, 'Download SVG'),
    ),
    controls(size),
  );
}

/** The re-render form: size, colours, error correction. */
function controls(size: number): HTMLElement {
  const sizeIn = h('input', { id: 'opt-size', type: 'number', min: 64, max: 1024, step: 8, value: size, 'aria-label': 'Size in pixels' });
  const fg = h('input', { id: 'opt-fg', type: 'color', value: `#${hex6(args.fgColor, '000000')}`, 'aria-label': 'Foreground colour' });
  const bg = h('input', { id: 'opt-bg', type: 'color', value: `#${hex6(args.bgColor, 'ffffff')}`, 'aria-label': 'Background colour' });
  const ec = h('select', { id: 'opt-ec', 'aria-label': 'Error correction' }, ...['L', 'M', 'Q', 'H'].map((l) => h('option', { value: l, selected: l === String(args.ecLevel ?? 'M') }, l)));
  const status = h('span', { id: 'status', class: 'muted' });
  const go = async () => {
    status.textContent = 'Rendering…';
    const next = { ...args, size: Number(sizeIn.value), fgColor: fg.value.slice(1), bgColor: bg.value.slice(1), ecLevel: ec.value, format: 'svg' };
    try {
      const r = await app.callServerTool({ name: 'qrcode_generate', arguments: next });
      if (!r.isError) args = next;
      render(r);
    } catch (err) {
      status.textContent = err instanceof Error ? err.message : String(err);
    }
  };
  // No <form>: a host's sandbox may not allow forms.
  return h('div', { class: 'row card', onkeydown: (e: KeyboardEvent) => e.key === 'Enter' && void go() },
    h('label', {}, 'Size ', sizeIn), h('label', {}, 'Colour ', fg), h('label', {}, 'Background ', bg), h('label', {}, 'ECC ', ec),
    h('button', { id: 'rerender', type: 'button', onclick: () => void go() }, 'Re-render'), status);
}

/** Downloads through the host (ui/download-file): the frame itself may not. SVG comes from a call when the result had none. */
async function download(kind: 'png' | 'svg'): Promise<void> {
  try {
    if (kind === 'svg' && svg === undefined) {
      const r = await app.callServerTool({ name: 'qrcode_generate', arguments: { ...args, format: 'svg' } });
      const t = r.content?.find((c) => c.type === 'text' && c.text.trimStart().startsWith('<'));
      svg = t && t.type === 'text' ? t.text : undefined;
    }
    const resource =
      kind === 'png'
        ? { uri: 'file:///qrcode.png', mimeType: 'image/png', blob: png ?? '' }
        : { uri: 'file:///qrcode.svg', mimeType: 'image/svg+xml', text: svg ?? '' };
    await app.downloadFile({ contents: [{ type: 'resource', resource }] });
  } catch (err) {
    showError(err);
  }
}

function hex6(v: unknown, dflt: string): string {
  const s = String(v ?? dflt).replace('#', '');
  return s.length === 3 ? [...s].map((c) => c + c).join('') : s.length === 6 ? s : dflt;
}
