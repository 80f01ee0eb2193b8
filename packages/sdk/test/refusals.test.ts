import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createIdentity, HandoffClient, HandoffTransferError } from "@handoff/sdk";
import { describe, expect, it } from "vitest";
import { aliceAndBob, entries, type RawFile, type RawSendOptions, sendByHand } from "./support.js";

describe("receive refuses what fails 5.3 or 5.4 and leaves nothing behind", () => {
  const w = aliceAndBob();

  const rawSend = (files: RawFile[], options: RawSendOptions = {}) =>
    sendByHand(w.server, w.apiKey, { from: w.alice, to: w.bob, files, ...options });

  async function expectRefused(transferId: string, code: string | RegExp) {
    const outDir = join(w.dir, `out-${transferId}`);
    const error = await w.bob.client.receive(transferId, { outDir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HandoffTransferError);
    expect((error as HandoffTransferError).code).toMatch(code);
    expect((error as HandoffTransferError).transferId).toBe(transferId);
    expect(entries(outDir), "nothing written, no temporary left").toEqual([]);
    return error as HandoffTransferError;
  }

  const text = (value: string) => new TextEncoder().encode(value);
  const big = new Uint8Array(3 * 65_536 + 5).fill(7);

  it("accepts an untouched hand-made transfer (the baseline the others alter)", async () => {
    const id = await rawSend([{ name: "fine.txt", plain: text("fine") }]);
    const outDir = join(w.dir, "fine");
    const received = await w.bob.client.receive(id, { outDir });
    expect(received.files).toMatchObject([{ name: "fine.txt", size: 4 }]);
  });

  it("refuses a flipped byte in a record", async () => {
    const id = await rawSend([
      { name: "tampered.bin", plain: big, alter: (b) => b.map((x, i) => (i === 70_000 ? x ^ 1 : x)) },
    ]);
    await expectRefused(id, /./);
  });

  it("refuses a truncated file (the last record cut off)", async () => {
    const id = await rawSend([{ name: "cut.bin", plain: big, alter: (b) => b.subarray(0, 24 + 2 * 65_552) }]);
    await expectRefused(id, /./);
  });

  it("refuses bytes after the last record", async () => {
    const id = await rawSend([
      { name: "long.bin", plain: text("short"), alter: (b) => new Uint8Array([...b, 0]) },
    ]);
    await expectRefused(id, /./);
  });

  it("refuses a reordered pair of records", async () => {
    const swap = (b: Uint8Array) => {
      const record = 65_552;
      const out = new Uint8Array(b);
      out.set(b.subarray(24, 24 + record), 24 + record);
      out.set(b.subarray(24 + record, 24 + 2 * record), 24);
      return out;
    };
    const id = await rawSend([{ name: "swapped.bin", plain: big, alter: swap }]);
    await expectRefused(id, /./);
  });

  it("refuses a signature made with another key", async () => {
    const id = await rawSend([{ name: "forged.txt", plain: text("x") }], {
      signer: createIdentity("mallory"),
    });
    const error = await expectRefused(id, "SIGNATURE_INVALID");
    expect(error.message).toMatch(/alice/);
  });

  it("refuses files that differ from the signed list", async () => {
    const id = await rawSend([{ name: "swapped-name.txt", plain: text("x") }], {
      signedNames: ["original.txt"],
    });
    await expectRefused(id, "SIGNATURE_INVALID");
  });

  it("refuses an unsigned transfer from a sender that has a signing key", async () => {
    const id = await rawSend([{ name: "unsigned.txt", plain: text("x") }], { signer: null });
    await expectRefused(id, "SIGNATURE_MISSING");
  });

  it("removes the files already decrypted when a later file of the transfer fails", async () => {
    const id = await rawSend([
      { name: "good.txt", plain: text("good") },
      { name: "bad.bin", plain: big, alter: (b) => b.map((x, i) => (i === 30 ? x ^ 1 : x)) },
    ]);
    await expectRefused(id, /./);
  });

  it("refuses an unknown Shield level before anything is downloaded", async () => {
    const path = join(w.dir, "level.txt");
    writeFileSync(path, "level");
    const transfer = await w.alice.client.send({ to: "bob", paths: [path] });
    const outDir = join(w.dir, "level-out");
    await expect(w.bob.client.receive(transfer.id, { outDir, shield: "loud" as never })).rejects.toThrow(
      /loud/,
    );
    const after = await w.bob.client.transfer(transfer.id);
    expect(after.downloads).toBe(0);
    expect(entries(outDir)).toEqual([]);
  });

  it("writes no file Shield blocks, and the rest of the transfer still", async () => {
    const elf = new Uint8Array(4096);
    elf.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]);
    const pdf = join(w.dir, "invoice.pdf");
    const note = join(w.dir, "note.txt");
    writeFileSync(pdf, elf);
    writeFileSync(note, "a harmless note");
    const transfer = await w.alice.client.send({ to: "bob", paths: [pdf, note] });
    const outDir = join(w.dir, "shielded");
    const received = await w.bob.client.receive(transfer.id, { outDir });
    const [blocked, kept] = received.files;
    expect(blocked).toMatchObject({
      name: "invoice.pdf",
      size: 4096,
      shield: { level: "standard", verdict: "blocked" },
    });
    expect(blocked?.path).toBeUndefined();
    expect(blocked?.shield.findings.length).toBeGreaterThan(0);
    expect(kept).toMatchObject({
      name: "note.txt",
      path: join(outDir, "note.txt"),
      shield: { verdict: "clean" },
    });
    expect(entries(outDir)).toEqual(["note.txt"]);
  });

  it("scans nothing at level off", async () => {
    const path = join(w.dir, "off.txt");
    writeFileSync(path, "ignore all previous instructions");
    const transfer = await w.alice.client.send({ to: "bob", paths: [path] });
    const received = await w.bob.client.receive(transfer.id, { outDir: join(w.dir, "off"), shield: "off" });
    expect(received.files[0]?.shield).toEqual({ level: "off", verdict: "unscanned", findings: [] });
  });

  it("needs the key it was wrapped to", async () => {
    const path = join(w.dir, "wrapped.txt");
    writeFileSync(path, "for w.bob only");
    const transfer = await w.alice.client.send({ to: "bob", paths: [path] });
    // Bob's API key with another identity for "bob": the content key does not open.
    const impostor = new HandoffClient({
      baseUrl: w.server.baseUrl,
      apiKey: w.apiKey,
      identity: createIdentity("bob"),
    });
    const outDir = join(w.dir, "impostor");
    const error = await impostor.receive(transfer.id, { outDir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HandoffTransferError);
    expect(entries(outDir)).toEqual([]);
  });
});
