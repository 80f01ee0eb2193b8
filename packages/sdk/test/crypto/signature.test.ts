import {
  ed25519PublicKeyOf,
  generateEd25519KeyPair,
  type SignedTransfer,
  signatureMessage,
  signTransfer,
  verifyTransfer,
} from "@handoff/sdk";
import { describe, expect, it } from "vitest";

const signer = generateEd25519KeyPair();
const transfer: SignedTransfer = {
  sender: "agent-a",
  recipient: "agent-b",
  recipientKeyVersion: 2,
  encryptedKey: "RVZFTg==",
  files: [
    { name: "report.pdf", encryptionIv: "AAAAAAAAAAAAAAAAAAAAAA==" },
    { name: "données.csv", encryptionIv: "AQEBAQEBAQEBAQEBAQEBAQ==" },
  ],
};

describe("sender signature (decisions 5.4)", () => {
  it("signs the UTF-8 of the JSON array of 5.4, files in upload order", () => {
    expect(new TextDecoder().decode(signatureMessage(transfer))).toBe(
      '["handoff/v1 signature","agent-a","agent-b",2,"RVZFTg==",' +
        '[["report.pdf","AAAAAAAAAAAAAAAAAAAAAA=="],["données.csv","AQEBAQEBAQEBAQEBAQEBAQ=="]]]',
    );
  });

  it("verifies against the signer's public key, and the seed gives that public key", () => {
    const signature = signTransfer(signer.privateKey, transfer);
    expect(Buffer.from(signature, "base64").length).toBe(64);
    expect(verifyTransfer(signer.publicKey, transfer, signature)).toBe(true);
    expect(ed25519PublicKeyOf(signer.privateKey)).toEqual(signer.publicKey);
  });

  it("fails for any change to what was signed", () => {
    const signature = signTransfer(signer.privateKey, transfer);
    const [first, second] = transfer.files as [SignedTransfer["files"][0], SignedTransfer["files"][0]];
    const changed: SignedTransfer[] = [
      { ...transfer, files: [{ ...first, name: "report2.pdf" }, second] },
      { ...transfer, files: [{ ...first, encryptionIv: second.encryptionIv }, second] },
      { ...transfer, files: [second, first] },
      { ...transfer, files: [first] },
      { ...transfer, recipient: "agent-c" },
      { ...transfer, sender: "agent-x" },
      { ...transfer, recipientKeyVersion: 3 },
      { ...transfer, encryptedKey: "RVZFTw==" },
    ];
    for (const t of changed) expect(verifyTransfer(signer.publicKey, t, signature)).toBe(false);
  });

  it("fails for another key, and for malformed signatures or keys, without throwing", () => {
    const signature = signTransfer(signer.privateKey, transfer);
    expect(verifyTransfer(generateEd25519KeyPair().publicKey, transfer, signature)).toBe(false);
    expect(verifyTransfer(signer.publicKey, transfer, "not base64")).toBe(false);
    expect(verifyTransfer(signer.publicKey, transfer, signature.slice(4))).toBe(false);
    expect(verifyTransfer(new Uint8Array(31), transfer, signature)).toBe(false);
  });
});
