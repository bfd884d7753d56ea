import type { AnyTool } from '../../registry.js';
import { imageConvert } from './image-convert.js';
import { qrcodeGenerate } from './qrcode-generate.js';

/** QR codes and image conversion. */
export const mediaTools: AnyTool[] = [qrcodeGenerate as unknown as AnyTool, imageConvert as unknown as AnyTool];
