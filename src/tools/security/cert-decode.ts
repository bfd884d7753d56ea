import { X509Certificate } from 'node:crypto';
import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';

/** Longest `pem`, in characters: a long chain is ~10 KB; past this the call is refused (400). */
export const CERT_MAX_PEM = 262_144;
/** Most certificates one call decodes. */
export const CERT_MAX_COUNT = 32;

/** A self-signed P-256 certificate for example.com (made with openssl for the docs' example). */
const EXAMPLE_PEM = [
  '-----BEGIN CERTIFICATE-----',
  'MIIBqjCCAVCgAwIBAgIUXlxeOvIlhO0exNH2hVSqNBFlpuUwCgYIKoZIzj0EAwIw',
  'FjEUMBIGA1UEAwwLZXhhbXBsZS5jb20wHhcNMjYxMTI2MTcyNzUyWhcNMzYxMTIz',
  'MTcyNzUyWjAWMRQwEgYDVQQDDAtleGFtcGxlLmNvbTBZMBMGByqGSM49AgEGCCqG',
  'SM49AwEHA0IABD2MJ9CmKeP/fvzhF7EZC2fxrxa1Xs4WS0tSWx8xFcI9f+tIsnN/',
  'JUOgNqbBY2qGWIB6FbCPeR/2tyQaPEp+SJejfDB6MB0GA1UdDgQWBBQWyGRFQN2T',
  'rUQVZo7SrtdeIPICJjAfBgNVHSMEGDAWgBQWyGRFQN2TrUQVZo7SrtdeIPICJjAP',
  'BgNVHRMBAf8EBTADAQH/MCcGA1UdEQQgMB6CC2V4YW1wbGUuY29tgg93d3cuZXhh',
  'bXBsZS5jb20wCgYIKoZIzj0EAwIDSAAwRQIhAPxwIQcUycWYjXtEks5z2IY2/pwN',
  'Y3h08+9O+A0aDuMyAiBK3rcY764vFOR+ciIVLZO4czBosdthuLufqFSEVAMpgw==',
  '-----END CERTIFICATE-----',
].join('\n');

const BLOCK = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g;

const Key = z.object({
  type: z.string().describe('rsa, rsa-pss, ec, ed25519, ed448, dsa…'),
  size: z.number().int().optional().describe('RSA/DSA modulus bits'),
  curve: z.string().optional().describe('EC named curve'),
});

const Cert = z.object({
  subject: z.string(),
  issuer: z.string(),
  san: z.array(z.string()).describe('subjectAltName entries, e.g. "DNS:example.com", "IP Address:192.0.2.1"'),
  not_before: z.string(),
  not_after: z.string(),
  expired: z.boolean(),
  not_yet_valid: z.boolean(),
  serial: z.string().describe('Hex'),
  fingerprint_sha256: z.string(),
  key: Key,
  is_ca: z.boolean(),
  self_signed: z.boolean(),
  signed_by_next: z.boolean().nullable().describe('Whether the next certificate of the chain issued and signed this one; null for the last'),
});

/** "CN=a\nO=b" (node's form) → "CN=a, O=b". */
const dn = (s: string) => s.split('\n').filter(Boolean).join(', ');

/** Node joins SAN entries with ", " and quotes (JSON) any value that itself holds one. */
function sanList(raw: string | undefined): string[] {
  if (!raw) return [];
  const out: string[] = [];
  for (const m of raw.matchAll(/([^:,]+):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/g)) {
    const value = m[2]!.startsWith('"') ? (JSON.parse(m[2]!) as string) : m[2]!;
    out.push(`${m[1]!.trim()}:${value}`);
  }
  return out;
}

function keyOf(c: X509Certificate): z.infer<typeof Key> {
  const k = c.publicKey;
  const d = k.asymmetricKeyDetails ?? {};
  return { type: k.asymmetricKeyType ?? 'unknown', ...(d.modulusLength !== undefined && { size: d.modulusLength }), ...(d.namedCurve !== undefined && { curve: d.namedCurve }) };
}

function issuedBy(c: X509Certificate, by: X509Certificate): boolean {
  try {
    return c.checkIssued(by) && c.verify(by.publicKey);
  } catch {
    return false;
  }
}

export const certDecode = defineTool({
  name: 'cert_decode',
  title: 'X.509 certificate decoder',
  description: 'Decode PEM certificates (one or a chain, leaf first): subject, issuer, SANs, validity against the real clock, serial, SHA-256 fingerprint, key type and size, CA flag, and whether each is signed by the next.',
  input: z.object({ pem: z.string().min(1).max(CERT_MAX_PEM).describe('One or more -----BEGIN CERTIFICATE----- blocks') }),
  output: z.object({ certificates: z.array(Cert) }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'POST', path: '/api/cert-decode' },
  example: { pem: EXAMPLE_PEM },
  handler: ({ pem }, ctx) => {
    const blocks = [...pem.matchAll(BLOCK)].map((m) => m[0]);
    if (blocks.length === 0) throw new ToolError('PARSE_ERROR', 'No -----BEGIN CERTIFICATE----- block found');
    if (blocks.length > CERT_MAX_COUNT) throw new ToolError('INVALID_INPUT', `Too many certificates: ${blocks.length} (limit ${CERT_MAX_COUNT})`);
    const certs = blocks.map((b, i) => {
      try {
        return new X509Certificate(b);
      } catch {
        throw new ToolError('PARSE_ERROR', `Certificate ${i + 1} is not valid DER/PEM`, { index: i });
      }
    });
    const now = ctx.services.clock.now();
    return {
      certificates: certs.map((c, i) => {
        const from = Date.parse(c.validFrom);
        const to = Date.parse(c.validTo);
        const next = certs[i + 1];
        return {
          subject: dn(c.subject),
          issuer: dn(c.issuer),
          san: sanList(c.subjectAltName),
          not_before: new Date(from).toISOString(),
          not_after: new Date(to).toISOString(),
          expired: now > to,
          not_yet_valid: now < from,
          serial: c.serialNumber.toLowerCase(),
          fingerprint_sha256: c.fingerprint256,
          key: keyOf(c),
          is_ca: c.ca,
          self_signed: issuedBy(c, c),
          signed_by_next: next ? issuedBy(c, next) : null,
        };
      }),
    };
  },
});
