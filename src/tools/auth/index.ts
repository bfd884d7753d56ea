import type { AnyTool } from '../../registry.js';
import { authInfo } from './auth-info.js';

export { authInfo };

/** The auth family: only what an agent may do with its own key (registration is a plain REST route). */
export const authTools: AnyTool[] = [authInfo as AnyTool];
