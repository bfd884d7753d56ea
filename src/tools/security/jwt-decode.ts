import { createPublicKey } from 'node:crypto';
import { compactVerify, decodeJwt, decodeProtectedHeader, importJWK, importSPKI, type CryptoKey, type JWK, type JWTPayload, type ProtectedHeaderParameters } from 'jose';
import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool, type ToolContext } from '../../registry.js';
import { depthExceeds, MAX_DEPTH } from '../shared.js';
import { toBytes } from './bytes.js';
import { jwksFor } from './jwks.js';

/** Longest token accepted, in characters. */
export const JWT_MAX_TOKEN = 65_536;
/** Longest key (PEM or JWK text), in characters. */
export const JWT_MAX_KEY = 16_384;

const HMAC_ALGS = ['HS256', 'HS384', 'HS512'];
// Every asymmetric JWS algorithm jose verifies; `none` is none of them, so it never verifies.
const PUBLIC_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

const ERRORS = ['alg_none', 'alg_not_allowed', 'key_mismatch', 'key_not_found', 'signature_invalid', 'expired', 'not_yet_valid', 'audience_mismatch', 'issuer_mismatch'] as const;
type Code = (typeof ERRORS)[number];

const iso = (seconds: unknown): string | null => (typeof seconds === 'number' && Number.isFinite(seconds) && Math.abs(seconds) <= 8.64e12 ? new Date(seconds * 1000).toISOString() : null);

function decode(token: string): { header: ProtectedHeaderParameters; payload: JWTPayload } {
  const parts = token.split('.').length;
  if (parts === 5) throw new ToolError('PARSE_ERROR', 'This is an encrypted JWT (JWE): its payload cannot be read without the decryption key');
  if (parts !== 3) throw new ToolError('PARSE_ERROR', `A JWT has 3 dot-separated parts; this has ${parts}`);
  let decoded: { header: ProtectedHeaderParameters; payload: JWTPayload };
  try {
    decoded = { header: decodeProtectedHeader(token), payload: decodeJwt(token) };
  } catch (err) {
    throw new ToolError('PARSE_ERROR', `Not a JWT: ${(err as Error).message}`);
  }
  // Both are echoed back: the service's nesting bound holds for what a tool returns too.
  if (depthExceeds(decoded.payload, MAX_DEPTH) || depthExceeds(decoded.header, MAX_DEPTH)) throw new ToolError('PARSE_ERROR', `JWT claims nested deeper than ${MAX_DEPTH}`);
  return decoded;
}

type Verifier = { algs: string[]; key: (alg: string) => Promise<CryptoKey | Uint8Array> } | { algs: string[]; jwks: string };

/** Public key text: a JWK (JSON) or any PEM node reads (SPKI, PKCS#1, a certificate, even a private key: its public half). */
function publicKey(text: string): Verifier {
  const t = text.trim();
  if (t.startsWith('{')) {
    let jwk: JWK;
    try {
      jwk = JSON.parse(t) as JWK;
    } catch {
      throw new ToolError('INVALID_INPUT', 'public_key looks like a JWK but is not valid JSON');
    }
    if (typeof jwk !== 'object' || jwk === null || typeof jwk.kty !== 'string') throw new ToolError('INVALID_INPUT', 'public_key JWK has no kty');
    const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub } = jwk;
    return { algs: jwk.kty === 'oct' ? HMAC_ALGS : PUBLIC_ALGS, key: (alg) => importJWK(jwk.kty === 'oct' ? jwk : pub, alg) };
  }
  let spki: string;
  try {
    spki = createPublicKey(t).export({ type: 'spki', format: 'pem' }).toString();
  } catch {
    throw new ToolError('INVALID_INPUT', 'public_key is neither a PEM key/certificate nor a JWK');
  }
  return { algs: PUBLIC_ALGS, key: (alg) => importSPKI(spki, alg) };
}

/** Whether the signature verifies; the errors when it does not. */
async function checkSignature(token: string, alg: string, v: Verifier, ctx: ToolContext): Promise<Code[]> {
  if (!v.algs.includes(alg)) return ['alg_not_allowed'];
  let key: Parameters<typeof compactVerify>[1];
  if ('jwks' in v) {
    key = await jwksFor(v.jwks, ctx);
  } else {
    try {
      key = await v.key(alg);
    } catch (err) {
      // A secret that is not what its encoding says is the caller's 400, not a mismatch.
      if (err instanceof ToolError) throw err;
      return ['key_mismatch'];
    }
  }
  try {
    await compactVerify(token, key as Parameters<typeof compactVerify>[1], { algorithms: v.algs });
    return [];
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_JWKS_MULTIPLE_MATCHING_KEYS') {
      for await (const k of err as unknown as AsyncIterable<CryptoKey>) {
        if (await compactVerify(token, k, { algorithms: v.algs }).then(() => true, () => false)) return [];
      }
      return ['signature_invalid'];
    }
    if (code === 'ERR_JWKS_NO_MATCHING_KEY') return ['key_not_found'];
    if (code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') return ['signature_invalid'];
    if (code === 'ERR_JWS_INVALID' || code === 'ERR_JOSE_NOT_SUPPORTED' || code === 'ERR_JOSE_ALG_NOT_ALLOWED') return ['alg_not_allowed'];
    return ['key_mismatch'];
  }
}

const Input = z.object({
  token: z.string().min(1).max(JWT_MAX_TOKEN).describe('The JWT (compact JWS)'),
  secret: z.string().max(JWT_MAX_KEY).optional().describe('HS* key'),
  secret_encoding: z.enum(['utf8', 'base64', 'hex']).default('utf8').describe('How secret carries the bytes'),
  public_key: z.string().max(JWT_MAX_KEY).optional().describe('PEM public key/certificate, or a JWK as JSON'),
  jwks_url: z.url({ protocol: /^https?$/ }).max(2048).optional().describe('JWKS URL (public https/http only; the header\'s jku/x5u are never followed)'),
  audience: z.string().max(1024).optional().describe('Required aud'),
  issuer: z.string().max(1024).optional().describe('Required iss'),
  clock_tolerance_s: z.number().int().min(0).max(86_400).default(0).describe('Leeway for exp/nbf, seconds'),
});

export const jwtDecode = defineTool({
  name: 'jwt_decode',
  title: 'JWT decoder / verifier',
  description:
    'Decode a JWT and check it against the real clock (exp, nbf). To verify the signature give one of secret (HS*), public_key (PEM or JWK) or jwks_url. alg none never verifies; jku/x5u are ignored.',
  input: Input,
  output: z.object({
    header: z.record(z.string(), z.unknown()),
    payload: z.record(z.string(), z.unknown()),
    verified: z.boolean().nullable().describe('Signature valid and no error (clock, aud, iss); null: no key given'),
    signature_valid: z.boolean().nullable().describe('The signature alone; null: no key given'),
    expired: z.boolean().nullable().describe('null: no exp'),
    not_yet_valid: z.boolean().nullable().describe('null: no nbf'),
    expires_at: z.string().nullable(),
    issued_at: z.string().nullable(),
    not_before: z.string().nullable(),
    errors: z.array(z.enum(ERRORS)),
    warnings: z.array(z.string()).describe('e.g. header_jku_ignored'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true },
  rest: { method: 'POST', path: '/api/jwt-decode' },
  example: {
    token: 'eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
  },
  handler: async (input, ctx) => {
    const { header, payload } = decode(input.token);
    const keys = [input.secret, input.public_key, input.jwks_url].filter((k) => k !== undefined).length;
    if (keys > 1) throw new ToolError('INVALID_INPUT', 'Give at most one of secret, public_key or jwks_url');
    const now = ctx.services.clock.now() / 1000;
    const tol = input.clock_tolerance_s;
    const errors: Code[] = [];
    const warnings = (['jku', 'x5u', 'jwk', 'x5c'] as const).filter((h) => header[h] !== undefined).map((h) => `header_${h}_ignored`);
    const alg = String(header.alg ?? '');
    let verified: boolean | null = null;
    let signature: boolean | null = null;
    if (alg.toLowerCase() === 'none') {
      errors.push('alg_none');
      verified = signature = false;
    } else if (keys === 1) {
      const v: Verifier =
        input.secret !== undefined
          ? { algs: HMAC_ALGS, key: async () => toBytes(input.secret!, input.secret_encoding, 'secret') }
          : input.public_key !== undefined
            ? publicKey(input.public_key)
            : { algs: PUBLIC_ALGS, jwks: input.jwks_url! };
      const failed = await checkSignature(input.token, alg, v, ctx);
      signature = failed.length === 0;
      errors.push(...failed);
    }
    const expired = typeof payload.exp === 'number' ? payload.exp <= now - tol : null;
    const notYet = typeof payload.nbf === 'number' ? payload.nbf > now + tol : null;
    if (expired) errors.push('expired');
    if (notYet) errors.push('not_yet_valid');
    if (input.audience !== undefined && !(Array.isArray(payload.aud) ? payload.aud : [payload.aud]).includes(input.audience)) errors.push('audience_mismatch');
    if (input.issuer !== undefined && payload.iss !== input.issuer) errors.push('issuer_mismatch');
    if (keys === 1 && verified === null) verified = errors.length === 0;
    return {
      header,
      payload,
      verified,
      signature_valid: signature,
      expired,
      not_yet_valid: notYet,
      expires_at: iso(payload.exp),
      issued_at: iso(payload.iat),
      not_before: iso(payload.nbf),
      errors,
      warnings,
    };
  },
});
