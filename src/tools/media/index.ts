import type { AnyTool } from '../../registry.js';
import { qrcodeGenerate } from './qrcode-generate.js';

export const mediaTools: AnyTool[] = [qrcodeGenerate as unknown as AnyTool];
