import {
  createCipheriv,
  createDecipheriv,
  createHash,
  hkdfSync,
  randomBytes,
  randomFillSync,
  timingSafeEqual,
} from "node:crypto";
import { crc32 } from "node:zlib";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
// Claim codes are read aloud and typed by people: no 0/O or 1/I/L.
const CLAIM_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/**
 * Random bytes drawn from a pool refilled in one call, as node:crypto's randomUUID does: an id or
 * key takes 16 to 40 of them, and a call into the generator for each (or an array built per id)
 * cost a small transfer's request thread about 2 % of its time.
 */
const randomPool = Buffer.allocUnsafe(4096);
let randomPoolAt = randomPool.length;

function randomByte(): number {
  if (randomPoolAt === randomPool.length) {
    randomFillSync(randomPool);
    randomPoolAt = 0;
  }
  return randomPool[randomPoolAt++] as number;
}

/** `length` characters of `alphabet`, each equally likely (bytes past the last whole alphabet are drawn again). */
function randomString(length: number, alphabet: string): string {
  const usable = 256 - (256 % alphabet.length);
  let out = "";
  while (out.length < length) {
    const byte = randomByte();
    if (byte < usable) out += alphabet[byte % alphabet.length];
  }
  return out;
}

/** `length` random base62 characters: the body of transfer and file ids. */
export const randomBase62 = (length: number): string => randomString(length, BASE62);

function base62Checksum(body: string): string {
  let value = crc32(body);
  let out = "";
  for (let i = 0; i < 6; i++) {
    out += BASE62[value % 62];
    value = Math.floor(value / 62);
  }
  return out;
}

export const API_KEY_PREFIX = "hnd_";
export const CONNECTION_TOKEN_PREFIX = "hct_";
const API_KEY_BODY_LENGTH = 40;

/** `hnd_` + 40 random base62 characters + a 6-character CRC32 checksum that catches typos offline. */
export function newApiKey(): string {
  const body = randomString(API_KEY_BODY_LENGTH, BASE62);
  return `${API_KEY_PREFIX}${body}${base62Checksum(body)}`;
}

/** True when the key has the right shape and checksum: a cheap filter before any look-up. */
export function apiKeyWellFormed(key: string): boolean {
  if (!key.startsWith(API_KEY_PREFIX) || key.length !== API_KEY_PREFIX.length + API_KEY_BODY_LENGTH + 6)
    return false;
  const body = key.slice(API_KEY_PREFIX.length, -6);
  return /^[0-9A-Za-z]+$/.test(body) && base62Checksum(body) === key.slice(-6);
}

export function sha256Hex(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, "hex");
  const right = Buffer.from(b, "hex");
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * A connection token names its agent (so connect reads one stream, no index) and carries 256 bits
 * of secret: `hct_<agent uuid without dashes>_<secret>`.
 */
export function newConnectionToken(agentId: string): string {
  return `${CONNECTION_TOKEN_PREFIX}${agentId.replaceAll("-", "")}_${randomBytes(32).toString("base64url")}`;
}

export function agentIdOfConnectionToken(token: string): string | null {
  const match = /^hct_([0-9a-f]{32})_[A-Za-z0-9_-]{43}$/.exec(token);
  const hex = match?.[1];
  if (!hex) return null;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const REQUEST_TOKEN_PREFIX = "hrq_";
const REQUEST_TOKEN = /^hrq_[A-Za-z0-9_-]{32}$/;

/**
 * Decisions 10.1: a request link's token, `hrq_` + 32 base64url characters (192 random bits). Only
 * its digest is kept (sha256Hex, as for API keys); the token itself is shown once.
 */
export function newRequestToken(): string {
  return `${REQUEST_TOKEN_PREFIX}${randomBytes(24).toString("base64url")}`;
}

/** True when the token has a request token's shape: a cheap filter before any look-up. */
export function requestTokenWellFormed(token: string): boolean {
  return REQUEST_TOKEN.test(token);
}

export function newClaimCode(): string {
  return `ADR-${randomString(4, CLAIM_ALPHABET)}-${randomString(4, CLAIM_ALPHABET)}`;
}

const purposeKey = (serverKey: Buffer, purpose: string) =>
  Buffer.from(hkdfSync("sha256", serverKey, Buffer.alloc(0), purpose, 32));

/** Seals a secret under a key derived from the server key (AES-256-GCM): `iv.tag.ciphertext`, base64url. */
export function seal(serverKey: Buffer, purpose: string, plaintext: string | Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", purposeKey(serverKey, purpose), iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return [iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString("base64url")).join(".");
}

/** Opens what `seal` sealed for the same purpose; throws when it was altered or sealed otherwise. */
export function unseal(serverKey: Buffer, purpose: string, sealed: string): Buffer {
  const [iv, tag, ciphertext] = sealed.split(".").map((part) => Buffer.from(part, "base64url"));
  if (!iv || !tag || !ciphertext) throw new Error("not a sealed value");
  const decipher = createDecipheriv("aes-256-gcm", purposeKey(serverKey, purpose), iv);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(ciphertext), decipher.final()]);
}
