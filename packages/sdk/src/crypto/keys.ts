import { ed25519, x25519 } from "@noble/curves/ed25519.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { HandoffCryptoError } from "./errors.js";

/** Raw 32-byte keys. For Ed25519 the private key is the 32-byte seed (RFC 8032). */
export interface KeyPair {
  privateKey: Uint8Array;
  publicKey: Uint8Array;
}

export const KEY_SIZE = 32;

export function randomBytes(length: number): Uint8Array {
  return globalThis.crypto.getRandomValues(new Uint8Array(length));
}

export function requireKey(key: Uint8Array, what: string): Uint8Array {
  if (!(key instanceof Uint8Array) || key.length !== KEY_SIZE) {
    throw new HandoffCryptoError("BAD_KEY", `${what} must be ${KEY_SIZE} bytes`);
  }
  return key;
}

/** A fresh random 32-byte content key K (5.2). */
export function newContentKey(): Uint8Array {
  return randomBytes(KEY_SIZE);
}

export function x25519PublicKeyOf(privateKey: Uint8Array): Uint8Array {
  return x25519.getPublicKey(requireKey(privateKey, "X25519 private key"));
}

export function ed25519PublicKeyOf(seed: Uint8Array): Uint8Array {
  return ed25519.getPublicKey(requireKey(seed, "Ed25519 seed"));
}

/**
 * How a person compares a public key with what its owner shows them: SHA-256 of the raw key, in
 * hex, in groups of four ("3f9a 0c71 …", 16 groups). A request link's page shows the agent's.
 */
export function keyFingerprint(publicKey: Uint8Array): string {
  const hex = [...sha256(requireKey(publicKey, "public key"))]
    .map((byte) => byte.toString(16).padStart(2, "0"))
    .join("");
  return (hex.match(/.{4}/g) as string[]).join(" ");
}

export function generateX25519KeyPair(): KeyPair {
  const privateKey = randomBytes(KEY_SIZE);
  return { privateKey, publicKey: x25519PublicKeyOf(privateKey) };
}

export function generateEd25519KeyPair(): KeyPair {
  const privateKey = randomBytes(KEY_SIZE);
  return { privateKey, publicKey: ed25519PublicKeyOf(privateKey) };
}

/**
 * X25519(privateKey, publicKey), refusing an all-zero result (5.1). noble refuses the low-order
 * public keys that produce it before running the ladder, so with keys of the right length its
 * refusal is that case; the explicit check below states the rule whatever noble does.
 */
export function x25519SharedSecret(privateKey: Uint8Array, publicKey: Uint8Array): Uint8Array {
  requireKey(privateKey, "X25519 private key");
  requireKey(publicKey, "X25519 public key");
  let shared: Uint8Array;
  try {
    shared = x25519.getSharedSecret(privateKey, publicKey);
  } catch {
    throw zeroSharedSecret();
  }
  if (shared.every((byte) => byte === 0)) throw zeroSharedSecret();
  return shared;
}

function zeroSharedSecret(): HandoffCryptoError {
  return new HandoffCryptoError(
    "ZERO_SHARED_SECRET",
    "X25519 with this public key gives an all-zero shared secret (a low-order point)",
  );
}
