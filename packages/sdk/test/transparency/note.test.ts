import { ed25519 } from "@noble/curves/ed25519.js";
import { describe, expect, it } from "vitest";
import { fromBase64 } from "../../src/crypto/base64.js";
import {
  checkpointBody,
  formatVerifierKey,
  NoteError,
  openCheckpoint,
  openNote,
  parseVerifierKey,
  signNote,
} from "../../src/transparency/index.js";

// The published example of Go's golang.org/x/mod/sumdb/note (its documentation and note_test.go):
// a key pair, a text and the note it signs. Ed25519 is deterministic, so our signer must give the
// very same bytes, and any note verifier then reads our checkpoints.
const VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const TEXT =
  "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const NOTE = `${TEXT}\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`;
// PRIVATE+KEY+<name>+<key id>+<base64(0x01 ‖ seed)>, the base64 holding '+' itself.
const SEED = fromBase64(SKEY.split("+").slice(4).join("+")).slice(1);

describe("signed notes (C2SP signed-note)", () => {
  it("signs the published example byte for byte and derives its verifier key", () => {
    expect(signNote(TEXT, "PeterNeumann", SEED)).toBe(NOTE);
    expect(formatVerifierKey("PeterNeumann", ed25519.getPublicKey(SEED))).toBe(VKEY);
  });

  it("opens the published note with its verifier key, and refuses an edited one", () => {
    const key = parseVerifierKey(VKEY);
    expect(openNote(NOTE, key)).toBe(TEXT);
    expect(() => openNote(NOTE.replace("cryptography", "cryptographY"), key)).toThrow(NoteError);
    expect(() => openNote(TEXT, key)).toThrow(NoteError);
  });

  it("refuses a mangled verifier key", () => {
    expect(() => parseVerifierKey(VKEY.replace("c74f20a3", "c74f20a4"))).toThrow(NoteError);
    expect(() => parseVerifierKey(VKEY.replace("PeterNeumann", "PeterNeumanm"))).toThrow(NoteError);
    expect(() => parseVerifierKey(`${VKEY}+`)).toThrow(NoteError);
    expect(() => parseVerifierKey("PeterNeumann+c74f20a3")).toThrow(NoteError);
    expect(() => parseVerifierKey(VKEY.slice(0, -4))).toThrow(NoteError);
  });

  it("passes over other signers and finds ours among them", () => {
    const other = ed25519.utils.randomSecretKey();
    const mine = ed25519.utils.randomSecretKey();
    const body = checkpointBody({ origin: "example.com/handoff", size: 3, root: new Uint8Array(32).fill(7) });
    const signedByOther = signNote(body, "witness.example", other);
    const signedByMine = signNote(body, "example.com/handoff", mine);
    const both = signedByOther + signedByMine.slice(body.length + 1);
    const key = parseVerifierKey(formatVerifierKey("example.com/handoff", ed25519.getPublicKey(mine)));
    expect(openCheckpoint(both, key)).toEqual({
      origin: "example.com/handoff",
      size: 3,
      root: new Uint8Array(32).fill(7),
    });
    expect(() => openCheckpoint(signedByOther, key)).toThrow(/not signed by example.com\/handoff/);
  });
});
