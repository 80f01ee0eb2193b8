import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { pipeline } from "node:stream/promises";
import { describe, expect, it } from "vitest";
import { DecryptRecords } from "../../src/security/record-cipher.js";
import { seal, unseal } from "../../src/security/secrets.js";
import { EncryptRecords } from "../support/legacy-at-rest.js";

const RECORD = 1024;
const key = randomBytes(32);

async function run(input: Buffer, transform: EncryptRecords | DecryptRecords, chunk = 300): Promise<Buffer> {
  const chunks = Array.from({ length: Math.ceil(input.length / chunk) }, (_, i) =>
    input.subarray(i * chunk, (i + 1) * chunk),
  );
  let out = Buffer.alloc(0);
  await pipeline(Readable.from(chunks), transform, async (source) => {
    out = await buffer(source);
  });
  return out;
}

const encrypt = (plain: Buffer) => run(plain, new EncryptRecords(key, RECORD));
const decrypt = (sealed: Buffer, withKey = key) => run(sealed, new DecryptRecords(withKey), 777);

describe("record cipher (encryption at rest)", () => {
  it.each([0, 1, RECORD - 1, RECORD, RECORD + 1, 3 * RECORD, 5 * RECORD + 17])(
    "gives back %i bytes exactly, never as plaintext on disk",
    async (size) => {
      const plain = randomBytes(size);
      const sealed = await encrypt(plain);
      if (size >= 16) expect(sealed.includes(plain.subarray(0, 16))).toBe(false);
      expect((await decrypt(sealed)).equals(plain)).toBe(true);
    },
  );

  it("refuses an altered byte", async () => {
    const sealed = await encrypt(randomBytes(2 * RECORD));
    sealed[20] = (sealed[20] ?? 0) ^ 1;
    await expect(decrypt(sealed)).rejects.toThrow();
  });

  it("refuses a blob cut off after a whole record", async () => {
    const sealed = await encrypt(randomBytes(3 * RECORD));
    await expect(decrypt(sealed.subarray(0, 16 + RECORD + 16))).rejects.toThrow();
  });

  it("refuses records swapped in place", async () => {
    const sealed = await encrypt(randomBytes(3 * RECORD));
    const one = 16;
    const two = 16 + RECORD + 16;
    const swapped = Buffer.concat([
      sealed.subarray(0, one),
      sealed.subarray(two, two + RECORD + 16),
      sealed.subarray(one, two),
      sealed.subarray(two + RECORD + 16),
    ]);
    await expect(decrypt(swapped)).rejects.toThrow();
  });

  it("refuses another key", async () => {
    await expect(decrypt(await encrypt(randomBytes(100)), randomBytes(32))).rejects.toThrow();
  });
});

describe("seal", () => {
  it("opens what it sealed for the same purpose only", () => {
    const serverKey = randomBytes(32);
    const secret = randomBytes(32);
    const sealed = seal(serverKey, "data-key", secret);
    expect(unseal(serverKey, "data-key", sealed).equals(secret)).toBe(true);
    expect(() => unseal(serverKey, "api-key", sealed)).toThrow();
    expect(() => unseal(randomBytes(32), "data-key", sealed)).toThrow();
  });
});
