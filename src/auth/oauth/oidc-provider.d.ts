/**
 * The part of oidc-provider 9 we use (it ships no types; @types/oidc-provider stops at 8).
 * Kept loose where we only pass values through.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface AdapterPayload {
    [key: string]: unknown;
  }
  export interface Interaction {
    uid: string;
    prompt: { name: string; details: Record<string, unknown> };
    params: Record<string, unknown>;
    session?: { accountId?: string } | undefined;
    grantId?: string | undefined;
    lastSubmission?: Record<string, unknown> | undefined;
    returnTo: string;
  }
  export interface ClientRecord {
    clientId: string;
    clientName?: string | undefined;
    redirectUris?: string[] | undefined;
    grantTypeAllowed(type: string): boolean;
    metadata(): Record<string, unknown>;
  }
  export interface AccessTokenRecord {
    jti: string;
    accountId: string;
    clientId: string;
    grantId: string;
    aud?: string | string[] | undefined;
    scope?: string | undefined;
    isExpired: boolean;
  }
  export interface GrantRecord {
    jti?: string;
    addOIDCScope(scope: string): void;
    addResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
  }
  export class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    proxy: boolean;
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
    interactionResult(req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>, opts?: { mergeWithLastSubmission?: boolean }): Promise<string>;
    on(event: string, listener: (...args: unknown[]) => void): this;
    readonly Client: { find(id: string): Promise<ClientRecord | undefined> };
    readonly AccessToken: { find(value: string): Promise<AccessTokenRecord | undefined> };
    readonly Grant: new (init: { accountId: string; clientId: string }) => GrantRecord;
  }
  export const errors: Record<string, new (description?: string) => Error>;
  export default Provider;
}
