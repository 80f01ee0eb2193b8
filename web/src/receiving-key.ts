import { fromBase64, toBase64, x25519PublicKeyOf } from "@handoff/sdk/crypto";
import type { Kdf, ReceivingKey } from "@handoff/sdk/types";
import { argon2id } from "hash-wasm";
import { api } from "./api.js";

const PARAMETERS = { algorithm: "argon2id", memory_kib: 65536, iterations: 3, parallelism: 1 } as const;
const SALT_BYTES = 16;
const KEY_BYTES = 32;
export const MIN_RECEIVING_PASSWORD = 10;

export interface KeyPair {
  privateKey: Uint8Array;
  publicKey: Uint8Array;
}

/** Lets the page paint its "working" message before argon2id holds the thread for a moment. */
const nextFrame = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));

/** Decisions 4.4: argon2id(password, salt, 64 MiB, 3 passes, 1 lane) → the 32-byte X25519 private key. */
export async function deriveKeyPair(password: string, kdf: Kdf): Promise<KeyPair> {
  if (kdf.algorithm !== "argon2id") throw new Error(`unsupported key derivation ${kdf.algorithm}`);
  await nextFrame();
  const privateKey = await argon2id({
    password,
    salt: fromBase64(kdf.salt),
    memorySize: kdf.memory_kib,
    iterations: kdf.iterations,
    parallelism: kdf.parallelism,
    hashLength: KEY_BYTES,
    outputType: "binary",
  });
  return { privateKey, publicKey: x25519PublicKeyOf(privateKey) };
}

/** The person's receiving key as the server has it; null when none is set yet (404). */
export async function fetchReceivingKey(): Promise<ReceivingKey | null> {
  try {
    return await api<ReceivingKey>("/v1/auth/receiving-key");
  } catch (error) {
    if ((error as { status?: number }).status === 404) return null;
    throw error;
  }
}

/** Derives a key pair from a new receiving password with a fresh salt and registers its public half. */
export async function setReceivingPassword(password: string): Promise<{ key: ReceivingKey; pair: KeyPair }> {
  const kdf: Kdf = { ...PARAMETERS, salt: toBase64(crypto.getRandomValues(new Uint8Array(SALT_BYTES))) };
  const pair = await deriveKeyPair(password, kdf);
  const key = await api<ReceivingKey>("/v1/auth/receiving-key", {
    method: "PUT",
    json: { public_key: toBase64(pair.publicKey), kdf },
  });
  return { key, pair };
}

/** Re-derives the private key from the receiving password; refuses a password that gives another key. */
export async function unlock(password: string, key: ReceivingKey): Promise<KeyPair> {
  const pair = await deriveKeyPair(password, key.kdf);
  if (toBase64(pair.publicKey) !== key.public_key) {
    throw new Error("That is not your receiving password: it gives a different key.");
  }
  return pair;
}

// The unlocked key lives in this tab's memory only; a reload asks for the password again.
let unlocked: { pair: KeyPair; version: number } | null = null;

export function unlockedKey(version: number): KeyPair | null {
  return unlocked && unlocked.version === version ? unlocked.pair : null;
}

export function keepUnlocked(pair: KeyPair, version: number): void {
  unlocked = { pair, version };
}

export function forgetUnlocked(): void {
  unlocked?.pair.privateKey.fill(0);
  unlocked = null;
}
