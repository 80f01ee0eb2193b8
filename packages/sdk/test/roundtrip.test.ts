import { randomBytes } from "node:crypto";
import { appendFileSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { encryptedSize, type Progress } from "@handoff/sdk";
import { describe, expect, it } from "vitest";
import { aliceAndBob, entries } from "./support.js";

/** The sizes of issue 8: empty, one byte, around the 64 KiB record edge, and several records. */
const SIZES = [0, 1, 65_535, 65_536, 65_537, 3 * 65_536 + 17];

describe.each([
  { path: "multipart", threshold: Number.MAX_SAFE_INTEGER },
  { path: "presigned", threshold: 0 },
])("send and receive through the $path path", ({ path, threshold }) => {
  const w = aliceAndBob({ client: { presignedThreshold: threshold } });

  it.each(SIZES)("a %i-byte file comes back byte for byte, encrypted on the wire", async (size) => {
    const source = join(w.dir, `in-${path}-${size}`);
    const content = randomBytes(size);
    writeFileSync(source, content);
    const progress: Progress[] = [];
    const transfer = await w.alice.client.send({
      to: "bob",
      paths: [source],
      onProgress: (p) => progress.push(p),
    });
    expect(transfer).toMatchObject({
      status: "active",
      is_encrypted: true,
      sender: "alice",
      recipient: "bob",
      files: [{ name: `in-${path}-${size}`, size: encryptedSize(size) }],
    });
    if (size > 0) expect(progress.at(-1)).toEqual({ file: `in-${path}-${size}`, bytes: size, total: size });

    const outDir = join(w.dir, `out-${path}-${size}`);
    const received = await w.bob.client.receive(transfer.id, { outDir });
    expect(received.transfer_id).toBe(transfer.id);
    expect(received.files).toHaveLength(1);
    const [file] = received.files;
    expect(file).toMatchObject({
      name: `in-${path}-${size}`,
      size,
      path: join(outDir, `in-${path}-${size}`),
    });
    expect(file?.shield.verdict).toBe("clean");
    expect(readFileSync(join(outDir, `in-${path}-${size}`)).equals(content)).toBe(true);
    expect(entries(outDir)).toEqual([`in-${path}-${size}`]);
  });

  it("carries several files, a message and a non-ASCII name in one transfer", async () => {
    const names = ["rapport é.txt", "data.json"];
    const contents = [Buffer.from("bonjour\n"), Buffer.from('{"a":1}')];
    for (const [index, name] of names.entries()) writeFileSync(join(w.dir, name), contents[index] as Buffer);
    const transfer = await w.alice.client.send({
      to: "bob",
      paths: names.map((name) => join(w.dir, name)),
      message: "two files",
      maxDownloads: 2,
    });
    expect(transfer.files.map((f) => f.name)).toEqual(names);
    expect(transfer.files.map((f) => f.type)).toEqual(["text/plain", "application/json"]);
    expect(transfer).toMatchObject({ message: "two files", max_downloads: 2, file_count: 2 });

    const outDir = join(w.dir, `multi-${path}`);
    const received = await w.bob.client.receive(transfer.id, { outDir });
    expect(received.files.map((f) => f.name)).toEqual(names);
    names.forEach((name, index) => {
      expect(readFileSync(join(outDir, name)).equals(contents[index] as Buffer)).toBe(true);
    });
    // A second receive into the same folder never overwrites: the copies get free names.
    const again = await w.bob.client.receive(transfer.id, { outDir });
    expect(again.files.map((f) => f.path)).toEqual([
      join(outDir, "rapport é (1).txt"),
      join(outDir, "data (1).json"),
    ]);
  });

  it("sends plain files unencrypted when asked", async () => {
    const source = join(w.dir, `plain-${path}.txt`);
    writeFileSync(source, "in the clear");
    const transfer = await w.alice.client.send({ to: "bob", paths: [source], plain: true });
    expect(transfer).toMatchObject({ is_encrypted: false, files: [{ size: 12 }] });
    const outDir = join(w.dir, `plain-out-${path}`);
    const received = await w.bob.client.receive(transfer.id, { outDir });
    expect(received.files[0]).toMatchObject({ size: 12 });
    expect(readFileSync(join(outDir, `plain-${path}.txt`), "utf8")).toBe("in the clear");
    expect(statSync(join(outDir, `plain-${path}.txt`)).mode & 0o777).toBe(0o600);
  });

  it("sends to an e-mail address as agent-to-human, plain multipart for the server to encrypt at rest", async () => {
    const source = join(w.dir, `for-a-person-${path}.txt`);
    writeFileSync(source, "hello human");
    const transfer = await w.alice.client.send({ to: "person@example.com", paths: [source] });
    expect(transfer).toMatchObject({
      mode: "agent-to-human",
      recipient: "person@example.com",
      status: "pending_recipient",
      // The server encrypts it in the format of decisions 5.3: 24-byte header, 11 bytes, one tag.
      is_encrypted: true,
      files: [{ size: 24 + 11 + 16 }],
    });
  });

  it("stops with FILE_CHANGED when a file grows while it is sent", async () => {
    const source = join(w.dir, `growing-${path}.bin`);
    writeFileSync(source, randomBytes(1024 * 1024));
    let grown = false;
    const sending = w.alice.client.send({
      to: "bob",
      paths: [source],
      onProgress: () => {
        if (!grown) appendFileSync(source, "more");
        grown = true;
      },
    });
    await expect(sending).rejects.toMatchObject({ code: "FILE_CHANGED" });
  });
});
