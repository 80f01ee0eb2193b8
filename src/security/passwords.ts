import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from "node:crypto";
import { seal, unseal } from "./secrets.js";

/**
 * Passwords (decisions 4.1): scrypt, a memory-hard function node:crypto has built in, so no native
 * dependency. N = 2^15, r = 8 takes 32 MiB and tens of milliseconds per guess. The parameters
 * travel with the hash, so they can be raised later without breaking stored ones. The hash is
 * then sealed under the server key before it goes into an event: the log alone is no offline
 * guessing material.
 */
const PARAMS = { N: 2 ** 15, r: 8, p: 1 };
const KEY_BYTES = 32;
const SALT_BYTES = 16;
const PURPOSE = "password-hash";

function derive(
  password: string,
  salt: Buffer,
  params: { N: number; r: number; p: number },
): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize("NFC"), salt, KEY_BYTES, options, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  );
}

/** The sealed hash of a new password, as the human stream records it. */
export async function hashPassword(serverKey: Buffer, password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, PARAMS);
  const encoded = `scrypt$${PARAMS.N}$${PARAMS.r}$${PARAMS.p}$${salt.toString("base64")}$${key.toString("base64")}`;
  return seal(serverKey, PURPOSE, encoded);
}

/** Whether `password` is the one sealed in `sealedHash`; false for anything malformed. */
export async function passwordMatches(
  serverKey: Buffer,
  sealedHash: string,
  password: string,
): Promise<boolean> {
  let encoded: string;
  try {
    encoded = unseal(serverKey, PURPOSE, sealedHash).toString("utf8");
  } catch {
    return false;
  }
  const [scheme, n, r, p, salt, expected] = encoded.split("$");
  if (scheme !== "scrypt" || !salt || !expected) return false;
  const wanted = Buffer.from(expected, "base64");
  const key = await derive(password, Buffer.from(salt, "base64"), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return key.length === wanted.length && timingSafeEqual(key, wanted);
}

/** The same work as a real check, for a login naming nobody: both answers take as long. */
let decoy: Promise<string> | null = null;
export async function burnPasswordCheck(serverKey: Buffer, password: string): Promise<void> {
  decoy ??= hashPassword(serverKey, randomBytes(16).toString("hex"));
  await passwordMatches(serverKey, await decoy, password);
}
