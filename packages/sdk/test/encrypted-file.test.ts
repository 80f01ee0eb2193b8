import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createEncryptStream, encryptedSize, newContentKey, RECORD_SIZE, webAesGcm } from "@handoff/sdk";
import { afterAll, describe, expect, it } from "vitest";
import { encryptedFileBatches, encryptedFileBatchesFrom } from "../src/encrypted-file.js";
import { FILE_CHUNK_BYTES } from "../src/streams.js";
import { collect, concat, expectBytes, patterned, streamOf } from "./crypto/streams.js";
import { tempDir } from "./support.js";

const key = newContentKey();
const salt = patterned(16, 5);

async function uploadBytes(path: string, size: number, onBytes: (bytes: number) => void = () => {}) {
  const parts: Uint8Array[] = [];
  for await (const batch of encryptedFileBatches(path, size, key, salt, onBytes)) parts.push(...batch);
  return concat(parts);
}

describe("a file encrypted for upload (the Node SDK's send)", () => {
  const dir = tempDir();
  afterAll(() => dir.cleanup());

  for (const size of [
    0,
    1,
    RECORD_SIZE,
    RECORD_SIZE + 1,
    FILE_CHUNK_BYTES,
    FILE_CHUNK_BYTES + 1,
    2 * FILE_CHUNK_BYTES + 3 * RECORD_SIZE + 5,
  ]) {
    it(`${size} bytes: exactly the bytes of the crypto core's record stream with the same key and salt`, async () => {
      const plaintext = patterned(size, size);
      const path = join(dir.path, `file-${size}.bin`);
      writeFileSync(path, plaintext);
      const reported: number[] = [];
      const sent = await uploadBytes(path, size, (bytes) => reported.push(bytes));
      const expected = await collect(
        streamOf(plaintext).pipeThrough(createEncryptStream(key, { salt }, webAesGcm).stream),
      );
      expectBytes(sent, expected.bytes);
      expect(reported.at(-1) ?? 0).toBe(size);
    });
  }

  it("fails with FILE_CHANGED when the file is shorter than declared, and when it is longer", async () => {
    const path = join(dir.path, "changed.bin");
    writeFileSync(path, patterned(FILE_CHUNK_BYTES + 10));
    await expect(uploadBytes(path, FILE_CHUNK_BYTES + 11)).rejects.toMatchObject({ code: "FILE_CHANGED" });
    await expect(uploadBytes(path, FILE_CHUNK_BYTES + 9)).rejects.toMatchObject({ code: "FILE_CHANGED" });
  });

  it("from any wire offset (a resumed upload): exactly the rest of the bytes sent from the start", async () => {
    const size = 2 * FILE_CHUNK_BYTES + 3 * RECORD_SIZE + 5;
    const path = join(dir.path, "resumed.bin");
    writeFileSync(path, patterned(size, 7));
    const whole = await uploadBytes(path, size);
    const record = RECORD_SIZE + 16;
    // In the header, on a record's first byte, inside a record, inside a tag, in the last record.
    for (const offset of [
      0,
      10,
      24,
      24 + record,
      24 + record + 1,
      24 + 2 * record - 3,
      24 + 35 * record + 2,
    ]) {
      const parts: Uint8Array[] = [];
      for await (const batch of encryptedFileBatchesFrom(path, size, key, salt, () => {}, offset))
        parts.push(...batch);
      expectBytes(concat(parts), whole.subarray(offset));
    }
    expect(whole.length).toBe(encryptedSize(size));
  });
});
