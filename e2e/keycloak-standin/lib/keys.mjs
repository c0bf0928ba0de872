// RSA signing keys of one realm. Keycloak signs with RS256 and publishes each
// active key in the realm's JWKS with a kid that is a base64url SHA-256
// thumbprint; the stand-in does the same (without the x5c certificate chain).

import { createHash, generateKeyPairSync, createPublicKey } from 'node:crypto';

function thumbprint(jwk) {
  const canonical = JSON.stringify({ e: jwk.e, kty: jwk.kty, n: jwk.n });
  return createHash('sha256').update(canonical).digest('base64url');
}

export function newSigningKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  return { ...jwk, kid: thumbprint(jwk), alg: 'RS256', use: 'sig' };
}

export function publicJwk(jwk) {
  const { kty, n, e, kid, alg, use } = jwk;
  return { kid, kty, alg, use, n, e };
}

// Base64 DER SubjectPublicKeyInfo, as Keycloak's realm endpoint shows it in
// `public_key`.
export function publicKeyBase64(jwk) {
  return createPublicKey({ key: publicJwk(jwk), format: 'jwk' })
    .export({ format: 'der', type: 'spki' })
    .toString('base64');
}

export class KeyRing {
  constructor() {
    this.keys = [newSigningKey()];
  }

  get current() {
    return this.keys[0];
  }

  // A new key becomes the signing key; the old ones stay published unless
  // dropOld is set.
  rotate({ dropOld = false } = {}) {
    const key = newSigningKey();
    this.keys = dropOld ? [key] : [key, ...this.keys];
    return key;
  }

  publicJwks() {
    return { keys: this.keys.map(publicJwk) };
  }
}
