import {
  createDecryptStream,
  createEncryptStream,
  encryptedSize,
  HandoffCryptoError,
  HEADER_SIZE,
  newContentKey,
  nodeAesGcm,
  RECORD_SIZE,
  TAG_SIZE,
} from "@handoff/sdk";
import { describe, expect, it } from "vitest";
import {
  AES_IMPLEMENTATIONS,
  collect,
  concat,
  expectBytes,
  flipped,
  patterned,
  recordStreams,
  streamOf,
} from "./streams.js";

const WIRE_RECORD = RECORD_SIZE + TAG_SIZE;
const key = newContentKey();

/** The wire bytes of record i (from 0) of an encrypted file. */
function record(ciphertext: Uint8Array, i: number): Uint8Array {
  const start = HEADER_SIZE + i * WIRE_RECORD;
  return ciphertext.subarray(start, Math.min(start + WIRE_RECORD, ciphertext.length));
}

function refusedWith(result: { error?: unknown }, code: HandoffCryptoError["code"]) {
  expect(result.error).toBeInstanceOf(HandoffCryptoError);
  expect((result.error as HandoffCryptoError).code).toBe(code);
}

for (const [name, aes] of AES_IMPLEMENTATIONS) {
  const { encrypt, decrypt } = recordStreams(aes);

  describe(`record stream round trips (decisions 5.3), ${name}`, () => {
    for (const size of [0, 1, 65_535, 65_536, 65_537, 300_000]) {
      it(`${size} bytes, fed in odd chunk sizes both ways, with exactly 24 + size + 16 × records on the wire`, async () => {
        const plaintext = patterned(size);
        const { encryptionIv, ciphertext } = await encrypt(key, plaintext);
        const records = Math.max(1, Math.ceil(size / RECORD_SIZE));
        expect(ciphertext.length).toBe(HEADER_SIZE + size + TAG_SIZE * records);
        expect(ciphertext.length).toBe(encryptedSize(size));
        const result = await decrypt(key, encryptionIv, ciphertext);
        expect(result.error).toBeUndefined();
        expectBytes(result.bytes, plaintext);
      });
    }

    it("writes the header HOE1 ‖ record size ‖ salt, and the salt is the encryption_iv", async () => {
      const salt = patterned(16, 9);
      const { encryptionIv, ciphertext } = await encrypt(key, patterned(10), { salt });
      expect(new TextDecoder().decode(ciphertext.subarray(0, 4))).toBe("HOE1");
      expect(new DataView(ciphertext.buffer).getUint32(4)).toBe(65_536);
      expect(ciphertext.subarray(8, 24)).toEqual(salt);
      expect(encryptionIv).toBe(Buffer.from(salt).toString("base64"));
    });

    it("an empty file is one empty record flagged last; an exact multiple gets no extra empty record", async () => {
      expect((await encrypt(key, new Uint8Array(0))).ciphertext.length).toBe(HEADER_SIZE + TAG_SIZE);
      expect((await encrypt(key, patterned(2 * RECORD_SIZE))).ciphertext.length).toBe(
        HEADER_SIZE + 2 * WIRE_RECORD,
      );
    });

    it("reads any record size from 1 KiB to 16 MiB, a byte at a time included", async () => {
      const plaintext = patterned(5000);
      const small = await encrypt(key, plaintext, { recordSize: 1024 });
      expect(small.ciphertext.length).toBe(encryptedSize(5000, 1024));
      expectBytes((await decrypt(key, small.encryptionIv, small.ciphertext, [1])).bytes, plaintext);
      const large = await encrypt(key, plaintext, { recordSize: 16 * 1024 * 1024 });
      expectBytes((await decrypt(key, large.encryptionIv, large.ciphertext)).bytes, plaintext);
    });

    it("refuses to write a record size outside 1 KiB–16 MiB", () => {
      for (const recordSize of [1023, 16 * 1024 * 1024 + 1]) {
        expect(() => createEncryptStream(key, { recordSize }, aes)).toThrow(
          expect.objectContaining({ code: "BAD_RECORD_SIZE" }),
        );
      }
    });

    it("honours back-pressure: an unread encrypted stream stops pulling its source", async () => {
      let pulled = 0;
      const endless = new ReadableStream<Uint8Array>({
        pull(controller) {
          pulled++;
          controller.enqueue(new Uint8Array(RECORD_SIZE));
        },
      });
      const { stream } = createEncryptStream(key, undefined, aes);
      const reader = endless.pipeThrough(stream).getReader();
      for (let i = 0; i < 4; i++) await reader.read();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(pulled).toBeLessThan(12);
      await reader.cancel();
    });
  });

  describe(`a record opened from parts (views of network chunks, never joined by node:crypto), ${name}`, () => {
    const nonce = new Uint8Array(12).fill(7);
    const plaintext = patterned(5000, 3);
    const split = (bytes: Uint8Array, cuts: number[]) =>
      [0, ...cuts].map((from, i) => bytes.subarray(from, cuts[i] ?? bytes.length));

    it("gives the plaintext of the whole record wherever the cuts fall, the tag's 16 bytes included", async () => {
      const aesKey = await aes(new Uint8Array(32).fill(9));
      const sealed = await aesKey.seal(nonce, plaintext);
      const tagStart = sealed.length - TAG_SIZE;
      for (const cuts of [
        [1],
        [2500],
        [tagStart],
        [tagStart - 1, tagStart + 5],
        [tagStart + 15],
        [10, 20, tagStart + 8],
      ]) {
        const parts = await aesKey.openParts(nonce, split(sealed, cuts));
        expectBytes(concat(parts ?? []), plaintext);
      }
    });

    it("answers null, and no plaintext, when any byte of any part is altered or the tag is short", async () => {
      const aesKey = await aes(new Uint8Array(32).fill(9));
      const sealed = await aesKey.seal(nonce, plaintext);
      const tagStart = sealed.length - TAG_SIZE;
      for (const at of [0, 2600, tagStart - 1, tagStart, sealed.length - 1]) {
        expect(await aesKey.openParts(nonce, split(flipped(sealed, at), [2500, tagStart + 8]))).toBeNull();
      }
      expect(await aesKey.openParts(nonce, split(sealed.subarray(0, TAG_SIZE - 1), [3]))).toBeNull();
    });
  });

  describe(`the reader refuses (decisions 5.3) and emits no unauthenticated plaintext, ${name}`, async () => {
    const plaintext = patterned(300_000); // records 0–3 full, record 4 holds 37,856 bytes
    const { encryptionIv, ciphertext } = await encrypt(key, plaintext);
    const aligned = patterned(2 * RECORD_SIZE);
    const alignedFile = await encrypt(key, aligned);
    const firstRecords = (n: number) => plaintext.subarray(0, n * RECORD_SIZE);

    it("a flipped byte inside a record: BAD_TAG, and only the records before it come out", async () => {
      const tampered = flipped(ciphertext, HEADER_SIZE + WIRE_RECORD + 1000);
      const result = await decrypt(key, encryptionIv, tampered);
      refusedWith(result, "BAD_TAG");
      expectBytes(result.bytes, firstRecords(1));
    });

    it("two altered records: the stream fails at the first of them, records opened after it never come out", async () => {
      const tampered = flipped(
        flipped(ciphertext, HEADER_SIZE + WIRE_RECORD + 7),
        HEADER_SIZE + 3 * WIRE_RECORD + 7,
      );
      const result = await decrypt(key, encryptionIv, tampered);
      refusedWith(result, "BAD_TAG");
      expect((result.error as Error).message).toContain("record 1 ");
      expectBytes(result.bytes, firstRecords(1));
    });

    it("a flipped byte in the last record's tag: BAD_TAG, the last record never comes out", async () => {
      const tampered = flipped(ciphertext, ciphertext.length - 1, 0x80);
      const result = await decrypt(key, encryptionIv, tampered);
      refusedWith(result, "BAD_TAG");
      expectBytes(result.bytes, firstRecords(4));
    });

    it("truncation at a record boundary: TRUNCATED, and the held inner record does not come out", async () => {
      const result = await decrypt(key, encryptionIv, ciphertext.subarray(0, HEADER_SIZE + 3 * WIRE_RECORD));
      refusedWith(result, "TRUNCATED");
      expectBytes(result.bytes, firstRecords(2));
    });

    it("truncation mid-record: refused (BAD_TAG, as a cut record cannot be told from an altered one)", async () => {
      const result = await decrypt(
        key,
        encryptionIv,
        ciphertext.subarray(0, HEADER_SIZE + 2 * WIRE_RECORD + 500),
      );
      refusedWith(result, "BAD_TAG");
      expectBytes(result.bytes, firstRecords(2));
    });

    it("truncation too short to hold a tag, after the header, and inside the header: TRUNCATED", async () => {
      for (const end of [HEADER_SIZE + WIRE_RECORD + 5, HEADER_SIZE, 10, 0]) {
        const result = await decrypt(key, encryptionIv, ciphertext.subarray(0, end));
        refusedWith(result, "TRUNCATED");
        expect(result.bytes.length).toBeLessThanOrEqual(RECORD_SIZE);
      }
    });

    it("reordered records: BAD_TAG before any plaintext", async () => {
      const swapped = concat([
        ciphertext.subarray(0, HEADER_SIZE),
        record(ciphertext, 1),
        record(ciphertext, 0),
      ]);
      const rest = ciphertext.subarray(HEADER_SIZE + 2 * WIRE_RECORD);
      const result = await decrypt(key, encryptionIv, concat([swapped, rest]));
      refusedWith(result, "BAD_TAG");
      expect(result.bytes.length).toBe(0);
    });

    it("a dropped inner record: BAD_TAG at its place", async () => {
      const dropped = concat([
        ciphertext.subarray(0, HEADER_SIZE + WIRE_RECORD),
        ciphertext.subarray(HEADER_SIZE + 2 * WIRE_RECORD),
      ]);
      const result = await decrypt(key, encryptionIv, dropped);
      refusedWith(result, "BAD_TAG");
      expectBytes(result.bytes, firstRecords(1));
    });

    it("bytes after a full last record: TRAILING_DATA, and the last record does not come out", async () => {
      for (const extra of [new Uint8Array(1), record(alignedFile.ciphertext, 0)]) {
        const result = await decrypt(key, alignedFile.encryptionIv, concat([alignedFile.ciphertext, extra]));
        refusedWith(result, "TRAILING_DATA");
        expectBytes(result.bytes, aligned.subarray(0, RECORD_SIZE));
      }
    });

    it("bytes after a short last record: refused (BAD_TAG), the last record does not come out", async () => {
      for (const extra of [new Uint8Array(3), record(ciphertext, 0)]) {
        const result = await decrypt(key, encryptionIv, concat([ciphertext, extra]));
        refusedWith(result, "BAD_TAG");
        expectBytes(result.bytes, firstRecords(4));
      }
    });

    it("an empty file's record with bytes after it: refused (BAD_TAG), nothing out", async () => {
      const empty = await encrypt(key, new Uint8Array(0));
      const result = await decrypt(
        key,
        empty.encryptionIv,
        concat([empty.ciphertext, new Uint8Array(70_000)]),
      );
      refusedWith(result, "BAD_TAG");
      expect(result.bytes.length).toBe(0);
    });

    it("a salt that differs from the encryption_iv: SALT_MISMATCH", async () => {
      const result = await decrypt(key, alignedFile.encryptionIv, ciphertext);
      refusedWith(result, "SALT_MISMATCH");
      expect(result.bytes.length).toBe(0);
    });

    it("a wrong magic, even in a stream shorter than the header: BAD_MAGIC", async () => {
      const wrong = ciphertext.slice();
      wrong[3] = 0x32; // "HOE2"
      refusedWith(await decrypt(key, encryptionIv, wrong), "BAD_MAGIC");
      refusedWith(await decrypt(key, encryptionIv, new TextEncoder().encode("PK\u0003\u0004")), "BAD_MAGIC");
    });

    it("a record size outside 1 KiB–16 MiB: BAD_RECORD_SIZE", async () => {
      for (const recordSize of [0, 1023, 16 * 1024 * 1024 + 1, 0xffffffff]) {
        const wrong = ciphertext.slice();
        new DataView(wrong.buffer).setUint32(4, recordSize);
        refusedWith(await decrypt(key, encryptionIv, wrong), "BAD_RECORD_SIZE");
      }
    });

    it("a wrong content key: BAD_TAG on the first record, nothing out", async () => {
      const result = await decrypt(newContentKey(), encryptionIv, ciphertext);
      refusedWith(result, "BAD_TAG");
      expect(result.bytes.length).toBe(0);
    });

    it("an encryption_iv that is not base64 of 16 bytes, or a key of the wrong size: refused up front", () => {
      expect(() => createDecryptStream(key, "AAAA")).toThrow(
        expect.objectContaining({ code: "BAD_ENCODING" }),
      );
      expect(() => createDecryptStream(key, `${encryptionIv.slice(0, -2)}`)).toThrow(
        expect.objectContaining({ code: "BAD_ENCODING" }),
      );
      expect(() => createDecryptStream(new Uint8Array(16), encryptionIv)).toThrow(
        expect.objectContaining({ code: "BAD_KEY" }),
      );
    });

    it("decrypts with the key given at creation even if the caller wipes its copy afterwards", async () => {
      const ownKey = key.slice();
      const stream = createDecryptStream(ownKey, encryptionIv, aes);
      ownKey.fill(0);
      const result = await collect(streamOf(ciphertext).pipeThrough(stream));
      expect(result.error).toBeUndefined();
      expectBytes(result.bytes, plaintext);
    });

    it("the error reaches a pipeTo caller as the HandoffCryptoError", async () => {
      const tampered = flipped(ciphertext, HEADER_SIZE);
      const sink = new WritableStream<Uint8Array>();
      const source = new Blob([tampered]).stream() as ReadableStream<Uint8Array>;
      await expect(
        source.pipeThrough(createDecryptStream(key, encryptionIv, aes)).pipeTo(sink),
      ).rejects.toMatchObject({
        code: "BAD_TAG",
      });
    });
  });
}

describe("encryptedSize", () => {
  it("is 24 + size + 16 × max(1, ceil(size / recordSize))", () => {
    expect(encryptedSize(0)).toBe(40);
    expect(encryptedSize(1)).toBe(41);
    expect(encryptedSize(65_536)).toBe(24 + 65_536 + 16);
    expect(encryptedSize(65_537)).toBe(24 + 65_537 + 32);
    expect(encryptedSize(2 ** 30)).toBe(24 + 2 ** 30 + 16 * 16_384);
    expect(encryptedSize(3000, 1024)).toBe(24 + 3000 + 48);
  });

  it("matches the bytes actually written, for a record size other than the default", async () => {
    const { ciphertext } = await recordStreams(nodeAesGcm).encrypt(key, patterned(4097), {
      recordSize: 2048,
    });
    expect(ciphertext.length).toBe(encryptedSize(4097, 2048));
  });
});

describe("createEncryptStream from a record on (a resumed upload, decisions 7.2)", () => {
  it("answers exactly the bytes of the whole stream from that record's start, header only from record 0", async () => {
    const salt = patterned(16, 3);
    const plaintext = patterned(3 * RECORD_SIZE + 7, 9);
    const whole = await collect(streamOf(plaintext).pipeThrough(createEncryptStream(key, { salt }).stream));
    for (const first of [0, 1, 3]) {
      const rest = await collect(
        streamOf(plaintext.subarray(first * RECORD_SIZE)).pipeThrough(
          createEncryptStream(key, { salt, firstRecord: first }).stream,
        ),
      );
      const from = first === 0 ? 0 : HEADER_SIZE + first * WIRE_RECORD;
      expectBytes(rest.bytes, whole.bytes.subarray(from));
    }
  });

  it("refuses a first record that is not a record index", () => {
    expect(() => createEncryptStream(key, { firstRecord: -1 })).toThrow(HandoffCryptoError);
  });
});
