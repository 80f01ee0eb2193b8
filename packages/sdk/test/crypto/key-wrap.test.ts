import {
  fromBase64,
  generateX25519KeyPair,
  HandoffCryptoError,
  newContentKey,
  toBase64,
  unwrapContentKey,
  wrapContentKey,
  x25519PublicKeyOf,
} from "@handoff/sdk";
import { describe, expect, it } from "vitest";
import { flipped } from "./streams.js";

const recipient = generateX25519KeyPair();

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(HandoffCryptoError);
  return (error as HandoffCryptoError).code;
}

describe("content key wrapping (decisions 5.2)", () => {
  it("round-trips to the recipient's private key as base64 of 92 bytes E ‖ N ‖ C", async () => {
    const contentKey = newContentKey();
    const encryptedKey = await wrapContentKey(contentKey, recipient.publicKey);
    expect(fromBase64(encryptedKey).length).toBe(92);
    expect(await unwrapContentKey(encryptedKey, recipient.privateKey)).toEqual(contentKey);
  });

  it("uses a fresh ephemeral key and nonce each time", async () => {
    const contentKey = newContentKey();
    const first = fromBase64(await wrapContentKey(contentKey, recipient.publicKey));
    const second = fromBase64(await wrapContentKey(contentKey, recipient.publicKey));
    expect(first.subarray(0, 32)).not.toEqual(second.subarray(0, 32));
    expect(first.subarray(32, 44)).not.toEqual(second.subarray(32, 44));
  });

  it("refuses another private key, and an altered wrap, with BAD_KEY", async () => {
    const encryptedKey = await wrapContentKey(newContentKey(), recipient.publicKey);
    expect(await refusal(unwrapContentKey(encryptedKey, generateX25519KeyPair().privateKey))).toBe("BAD_KEY");
    for (const position of [0, 40, 60, 91]) {
      const altered = toBase64(flipped(fromBase64(encryptedKey), position));
      expect(await refusal(unwrapContentKey(altered, recipient.privateKey))).toBe("BAD_KEY");
    }
  });

  it("refuses a low-order public key whose shared secret is all zero (5.1), both ways", async () => {
    const lowOrder = new Uint8Array(32); // u = 0
    const uOne = new Uint8Array(32);
    uOne[0] = 1;
    for (const publicKey of [lowOrder, uOne]) {
      expect(await refusal(wrapContentKey(newContentKey(), publicKey))).toBe("ZERO_SHARED_SECRET");
    }
    const forged = fromBase64(await wrapContentKey(newContentKey(), recipient.publicKey));
    forged.fill(0, 0, 32);
    expect(await refusal(unwrapContentKey(toBase64(forged), recipient.privateKey))).toBe(
      "ZERO_SHARED_SECRET",
    );
  });

  it("refuses malformed input: wrong lengths and non-base64", async () => {
    expect(await refusal(unwrapContentKey(toBase64(new Uint8Array(91)), recipient.privateKey))).toBe(
      "BAD_ENCODING",
    );
    expect(await refusal(unwrapContentKey("not base64!", recipient.privateKey))).toBe("BAD_ENCODING");
    expect(await refusal(wrapContentKey(new Uint8Array(16), recipient.publicKey))).toBe("BAD_KEY");
    expect(await refusal(wrapContentKey(newContentKey(), new Uint8Array(31)))).toBe("BAD_KEY");
  });

  it("derives the public key from the private key as generation does", () => {
    expect(x25519PublicKeyOf(recipient.privateKey)).toEqual(recipient.publicKey);
  });
});
