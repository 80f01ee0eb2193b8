import { HandoffCryptoError, keyFingerprint } from "@handoff/sdk/crypto";
import { describe, expect, it } from "vitest";

describe("keyFingerprint: what a person compares a public key by", () => {
  it("is SHA-256 of the raw key in hex, in sixteen groups of four", () => {
    // SHA-256 of 32 zero bytes, as `printf '\0%.0s' {1..32} | sha256sum` gives it.
    expect(keyFingerprint(new Uint8Array(32))).toBe(
      "6668 7aad f862 bd77 6c8f c18b 8e9f 8e20 0897 1485 6ee2 33b3 902a 591d 0d5f 2925",
    );
  });

  it("refuses what is not a 32-byte key", () => {
    expect(() => keyFingerprint(new Uint8Array(31))).toThrow(HandoffCryptoError);
  });
});
