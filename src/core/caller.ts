/** Who is calling, as seen by the transport. */
export interface Caller {
  /** The API key's id (never the raw key), or null for keyless calls. */
  keyId: string | null;
  /** Client address used for keyless limits ('stdio' / 'memory' for local transports). */
  ip: string;
  transport: 'rest' | 'mcp-http' | 'stdio' | 'memory';
}
