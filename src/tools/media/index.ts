import { defineFamily } from '../../core/family.js';
import { imageConvert } from './image-convert.js';
import { qrcodeGenerate } from './qrcode-generate.js';

/** QR codes and image conversion. */
export const mediaFamily = defineFamily({
  instructions: 'make QR codes (SVG, PNG, BMP, data URL) and convert or resize images (WebP, AVIF, PNG, JPEG).',
  tag: { name: 'Generators', description: 'Produce things: QR codes (SVG, PNG, BMP, data URL) and converted images.' },
  tools: [qrcodeGenerate, imageConvert],
});
