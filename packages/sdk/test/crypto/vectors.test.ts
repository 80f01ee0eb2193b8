// The published test vectors (docs/encryption.md, vectors.json): the SDK must reproduce every one,
// and so must an independent implementation on node:crypto alone, so that the vectors are not
// merely the SDK agreeing with itself.
import crypto from "node:crypto";
import { readFileSync } from "node:fs";
import {
  ed25519PublicKeyOf,
  signatureMessage,
  signTransfer,
  unwrapContentKey,
  verifyTransfer,
  wrapContentKey,
  x25519PublicKeyOf,
} from "@handoff/sdk";
import { describe, expect, it } from "vitest";
import { AES_IMPLEMENTATIONS, recordStreams } from "./streams.js";
import vectors from "./vectors.json" with { type: "json" };

const { inputs, outputs } = vectors;
const hex = (text: string) => new Uint8Array(Buffer.from(text, "hex"));
const toHex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const sha256 = (bytes: Uint8Array) => crypto.createHash("sha256").update(bytes).digest("hex");

type FileInput = (typeof inputs.files)[number];
function plaintextOf(file: FileInput): Uint8Array {
  if ("plaintext_utf8" in file) return new TextEncoder().encode(file.plaintext_utf8);
  return Uint8Array.from({ length: file.plaintext_mod251_length }, (_, i) => i % 251);
}

const contentKey = hex(inputs.content_key);
const files = inputs.files.map((file, i) => ({
  input: file,
  expected: outputs.files[i],
  plaintext: plaintextOf(file),
}));
const signedTransfer = {
  sender: inputs.sender,
  recipient: inputs.recipient,
  recipientKeyVersion: inputs.recipient_key_version,
  encryptedKey: outputs.encrypted_key,
  files: outputs.files.map((file) => ({ name: file.name, encryptionIv: file.encryption_iv })),
};

describe("the SDK reproduces every published vector", () => {
  it("public keys of the fixed private keys", () => {
    expect(toHex(x25519PublicKeyOf(hex(inputs.recipient_x25519_private_key)))).toBe(
      outputs.recipient_x25519_public_key,
    );
    expect(toHex(x25519PublicKeyOf(hex(inputs.ephemeral_x25519_private_key)))).toBe(
      outputs.ephemeral_x25519_public_key,
    );
    expect(toHex(ed25519PublicKeyOf(hex(inputs.signing_ed25519_seed)))).toBe(
      outputs.signing_ed25519_public_key,
    );
  });

  it("encrypted_key, and it unwraps to the content key", async () => {
    const encryptedKey = await wrapContentKey(contentKey, hex(outputs.recipient_x25519_public_key), {
      ephemeralPrivateKey: hex(inputs.ephemeral_x25519_private_key),
      nonce: hex(inputs.wrap_nonce),
    });
    expect(encryptedKey).toBe(outputs.encrypted_key);
    expect(await unwrapContentKey(encryptedKey, hex(inputs.recipient_x25519_private_key))).toEqual(
      contentKey,
    );
  });

  for (const { input, expected, plaintext } of files) {
    it.each(AES_IMPLEMENTATIONS)(
      `${input.name}: encryption_iv, encrypted bytes, and back (%s)`,
      async (_, aes) => {
        const { encrypt, decrypt } = recordStreams(aes);
        const { encryptionIv, ciphertext } = await encrypt(contentKey, plaintext, { salt: hex(input.salt) });
        expect(sha256(plaintext)).toBe(expected?.plaintext_sha256);
        expect(encryptionIv).toBe(expected?.encryption_iv);
        expect(ciphertext.length).toBe(expected?.encrypted_size);
        expect(sha256(ciphertext)).toBe(expected?.ciphertext_sha256);
        if (expected && "ciphertext_hex" in expected) expect(toHex(ciphertext)).toBe(expected.ciphertext_hex);
        const result = await decrypt(contentKey, encryptionIv, ciphertext);
        expect(result.error).toBeUndefined();
        expect(sha256(result.bytes)).toBe(expected?.plaintext_sha256);
      },
    );
  }

  it("the signed message and the deterministic Ed25519 signature", () => {
    expect(new TextDecoder().decode(signatureMessage(signedTransfer))).toBe(outputs.signature_message);
    expect(signTransfer(hex(inputs.signing_ed25519_seed), signedTransfer)).toBe(outputs.sender_signature);
    const signingKey = hex(outputs.signing_ed25519_public_key);
    expect(verifyTransfer(signingKey, signedTransfer, outputs.sender_signature)).toBe(true);
  });
});

describe("node:crypto alone, independently of the SDK, reproduces every published vector", () => {
  const der = (prefix: string, raw: string) =>
    Buffer.concat([Buffer.from(prefix, "hex"), Buffer.from(raw, "hex")]);
  const privateKey = (oid: string, raw: string) =>
    crypto.createPrivateKey({
      key: der(`302e020100300506032b65${oid}04220420`, raw),
      format: "der",
      type: "pkcs8",
    });
  const publicKey = (oid: string, raw: string) =>
    crypto.createPublicKey({ key: der(`302a300506032b65${oid}032100`, raw), format: "der", type: "spki" });
  const rawPublicOf = (key: crypto.KeyObject) =>
    toHex(crypto.createPublicKey(key).export({ format: "der", type: "spki" }).subarray(-32));
  const hkdf = (ikm: Uint8Array, salt: Uint8Array, info: string) =>
    new Uint8Array(crypto.hkdfSync("sha256", ikm, salt, info, 32));
  const gcm = (key: Uint8Array, nonce: Uint8Array, plaintext: Uint8Array) => {
    const cipher = crypto.createCipheriv("aes-256-gcm", key, nonce);
    return Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  };
  const X25519 = "6e";
  const ED25519 = "70";

  it("key wrap: public keys, shared secret, wrapping key, encrypted_key", () => {
    const ephemeral = privateKey(X25519, inputs.ephemeral_x25519_private_key);
    const R = rawPublicOf(privateKey(X25519, inputs.recipient_x25519_private_key));
    const E = rawPublicOf(ephemeral);
    expect([R, E]).toEqual([outputs.recipient_x25519_public_key, outputs.ephemeral_x25519_public_key]);
    const S = crypto.diffieHellman({ privateKey: ephemeral, publicKey: publicKey(X25519, R) });
    expect(toHex(S)).toBe(outputs.shared_secret);
    const W = hkdf(S, hex(E + R), "handoff/v1 key-wrap");
    expect(toHex(W)).toBe(outputs.wrapping_key);
    const C = gcm(W, hex(inputs.wrap_nonce), contentKey);
    expect(Buffer.concat([hex(E), hex(inputs.wrap_nonce), C]).toString("base64")).toBe(outputs.encrypted_key);
  });

  for (const { input, expected, plaintext } of files) {
    it(`${input.name}: file key and records`, () => {
      const F = hkdf(contentKey, hex(input.salt), "handoff/v1 file");
      expect(toHex(F)).toBe(expected?.file_key);
      const header = Buffer.concat([Buffer.from("HOE1"), hex("00010000"), hex(input.salt)]);
      const count = Math.max(1, Math.ceil(plaintext.length / 65536));
      const records = Array.from({ length: count }, (_, i) => {
        const nonce = Buffer.alloc(12);
        nonce.writeUInt32BE(i, 7);
        nonce[11] = i === count - 1 ? 1 : 0;
        return gcm(F, nonce, plaintext.subarray(i * 65536, (i + 1) * 65536));
      });
      const ciphertext = Buffer.concat([header, ...records]);
      expect(Buffer.from(hex(input.salt)).toString("base64")).toBe(expected?.encryption_iv);
      expect(ciphertext.length).toBe(expected?.encrypted_size);
      expect(sha256(ciphertext)).toBe(expected?.ciphertext_sha256);
    });
  }

  it("a file another writer ended with an empty last record after a full one is still read", async () => {
    const salt = hex(inputs.files[0]?.salt ?? "");
    const F = hkdf(contentKey, salt, "handoff/v1 file");
    const full = Uint8Array.from({ length: 65536 }, (_, i) => i % 251);
    const nonce = (index: number, flag: number) => hex(`${index.toString(16).padStart(22, "0")}0${flag}`);
    const header = Buffer.concat([Buffer.from("HOE1"), hex("00010000"), salt]);
    const file = Buffer.concat([header, gcm(F, nonce(0, 0), full), gcm(F, nonce(1, 1), new Uint8Array(0))]);
    for (const [, aes] of AES_IMPLEMENTATIONS) {
      const result = await recordStreams(aes).decrypt(contentKey, Buffer.from(salt).toString("base64"), file);
      expect(result.error).toBeUndefined();
      expect(sha256(result.bytes)).toBe(sha256(full));
    }
  });

  it("signature over the JSON message of 5.4", () => {
    const message = JSON.stringify([
      "handoff/v1 signature",
      inputs.sender,
      inputs.recipient,
      inputs.recipient_key_version,
      outputs.encrypted_key,
      outputs.files.map((file) => [file.name, file.encryption_iv]),
    ]);
    expect(message).toBe(outputs.signature_message);
    const seed = privateKey(ED25519, inputs.signing_ed25519_seed);
    expect(rawPublicOf(seed)).toBe(outputs.signing_ed25519_public_key);
    expect(crypto.sign(null, Buffer.from(message), seed).toString("base64")).toBe(outputs.sender_signature);
  });
});

describe("docs/encryption.md", () => {
  it("publishes every input and output of the vectors", () => {
    const docs = readFileSync(new URL("../../../../docs/encryption.md", import.meta.url), "utf8");
    const values = [
      ...Object.values(inputs).filter((value) => typeof value === "string"),
      ...inputs.files.map((file) => file.salt),
      ...Object.values(outputs).filter((value) => typeof value === "string"),
      ...outputs.files.flatMap((file) => Object.values(file).map(String)),
    ];
    for (const value of values) expect(docs, value).toContain(value);
  });
});
