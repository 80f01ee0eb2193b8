import { fromBase64, HandoffCryptoError, toBase64 } from "@handoff/sdk";
import { describe, expect, it } from "vitest";

describe("base64 (standard alphabet, padded)", () => {
  it("agrees with Node's encoder for every length around the padding cases", () => {
    for (let length = 0; length < 40; length++) {
      const bytes = Uint8Array.from({ length }, (_, i) => (i * 97 + 250) & 0xff);
      const text = toBase64(bytes);
      expect(text).toBe(Buffer.from(bytes).toString("base64"));
      expect(fromBase64(text)).toEqual(bytes);
    }
  });

  it("refuses anything but the canonical spelling", () => {
    for (const text of [
      "QQ",
      "QQ=",
      "Q===",
      "QR==",
      "-_8=",
      "+/8 ",
      " QQ==",
      "QQ==\n",
      "QUJD RA==",
      "=QQ=",
    ]) {
      expect(() => fromBase64(text), text).toThrow(HandoffCryptoError);
    }
    expect(fromBase64("+/8=")).toEqual(new Uint8Array([0xfb, 0xff]));
  });
});
