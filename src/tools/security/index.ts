import { defineFamily } from '../../core/family.js';
import { certDecode } from './cert-decode.js';
import { encode } from './encode.js';
import { hash } from './hash.js';
import { idGenerate, idInspect } from './id-tools.js';
import { jwtDecode } from './jwt-decode.js';

/** What models cannot compute in their heads: digests, encodings, JWT checks, ids, certificates. */
export const securityFamily = defineFamily({
  instructions: 'hash or HMAC data, encode/decode base64/hex/URL/gzip, decode and verify JWTs, generate or inspect UUIDs/ULIDs/nanoids, decode X.509 certificates.',
  tag: { name: 'Security', description: 'Hashes and HMACs, encodings, JWT decoding and verification, ids (UUID, ULID, nanoid), X.509 certificates.' },
  tools: [hash, encode, jwtDecode, idGenerate, idInspect, certDecode],
  errors: ['PARSE_ERROR'],
});
