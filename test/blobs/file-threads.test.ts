import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough, Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { afterAll, describe, expect, it } from "vitest";
import { FileThreads } from "../../src/blobs/file-threads.js";
import { wholeIfSmall } from "../../src/blobs/filesystem.js";
import { tempDir } from "../support/databases.js";

const dir = tempDir("handoff-file-threads-");
const threads = new FileThreads(2);
afterAll(async () => {
  await threads.close();
  dir.remove();
});

describe("the store's file threads", () => {
  it("write a file whole: the temporary folder and the target's made on first use, the temporary file gone", async () => {
    const bytes = randomBytes(3000);
    const temp = join(dir.path, "new-tmp", "a.part");
    const target = join(dir.path, "transfers", "tr_1", "f_1");
    await threads.writeWhole(temp, target, bytes);
    expect(readFileSync(target).equals(bytes)).toBe(true);
    expect(statSync(target).mode & 0o777).toBe(0o600);
    expect(existsSync(temp)).toBe(false);
  });

  it("never write over a temporary file that exists, and fail with the file system's own error", async () => {
    const temp = join(dir.path, "taken.part");
    writeFileSync(temp, "someone else's");
    const target = join(dir.path, "transfers", "tr_2", "f_1");
    await expect(threads.writeWhole(temp, target, Buffer.from("mine"))).rejects.toMatchObject({
      code: "EEXIST",
      syscall: "open",
    });
    expect(readFileSync(temp, "utf8")).toBe("someone else's");
    expect(existsSync(target)).toBe(false);
  });

  it("read a file whole up to the limit, say when it is larger, and when it is missing", async () => {
    const path = join(dir.path, "read", "f");
    mkdirSync(join(dir.path, "read"));
    const bytes = randomBytes(100);
    writeFileSync(path, bytes);
    const whole = await threads.readWhole(path, 100);
    expect(whole.kind === "bytes" && Buffer.isBuffer(whole.bytes) && whole.bytes.equals(bytes)).toBe(true);
    expect(await threads.readWhole(path, 99)).toEqual({ kind: "large" });
    expect(await threads.readWhole(join(dir.path, "read", "nothing"), 100)).toEqual({ kind: "missing" });
    // A path through a file (ENOTDIR) is missing too, as fs/promises callers treat it.
    expect(await threads.readWhole(join(path, "below"), 100)).toEqual({ kind: "missing" });
  });

  it("answer many requests at once, each with its own file", async () => {
    const files = Array.from({ length: 40 }, (_, i) => ({
      target: join(dir.path, "many", `f${i}`),
      bytes: randomBytes(i * 50),
    }));
    await Promise.all(
      files.map(({ target, bytes }, i) =>
        threads.writeWhole(join(dir.path, "many-tmp", `${i}.part`), target, bytes),
      ),
    );
    const read = await Promise.all(files.map(({ target }) => threads.readWhole(target, 64 * 1024)));
    read.forEach((whole, i) => {
      expect(whole.kind === "bytes" && whole.bytes.equals(files[i]?.bytes as Buffer)).toBe(true);
    });
  });

  it("answer a read while every writer is busy with a large write: a download never waits behind fsyncs", async () => {
    const own = new FileThreads(1);
    const small = join(dir.path, "small");
    writeFileSync(small, "ready");
    const order: string[] = [];
    const large = own
      .writeWhole(join(dir.path, "large.part"), join(dir.path, "large"), randomBytes(64 * 1024 * 1024))
      .then(() => order.push("large write"));
    const read = own.readWhole(small, 64).then((whole) => {
      order.push("small read");
      return whole;
    });
    expect(await read).toMatchObject({ kind: "bytes" });
    await large;
    expect(order).toEqual(["small read", "large write"]);
    await own.close();
  });

  it("refuse work once closed: a closed store writes nothing more", async () => {
    const own = new FileThreads(1);
    const path = join(dir.path, "closed");
    await own.writeWhole(join(dir.path, "closed.part"), path, Buffer.from("one"));
    await own.close();
    await expect(own.readWhole(path, 10)).rejects.toThrow("the blob store is closed");
    await expect(
      own.writeWhole(join(dir.path, "late.part"), join(dir.path, "late"), Buffer.from("two")),
    ).rejects.toThrow("the blob store is closed");
    expect(existsSync(join(dir.path, "late"))).toBe(false);
  });
});

describe("a body read whole when small", () => {
  const chunks = (sizes: number[]) => sizes.map((size) => randomBytes(size));

  it("is the whole body when it has at most the limit", async () => {
    const parts = chunks([10, 20, 34]);
    const whole = await wholeIfSmall(Readable.from(parts), 64);
    expect(whole?.equals(Buffer.concat(parts))).toBe(true);
    expect((await wholeIfSmall(Readable.from([]), 64))?.length).toBe(0);
  });

  it("is null past the limit, and the body still gives every byte in order to whoever reads it next", async () => {
    const parts = chunks([40, 40, 40]);
    const body = Readable.from(parts);
    expect(await wholeIfSmall(body, 64)).toBeNull();
    const rest: Buffer[] = [];
    for await (const chunk of body) rest.push(chunk as Buffer);
    expect(Buffer.concat(rest).equals(Buffer.concat(parts))).toBe(true);
  });

  it("fails with the body's error", async () => {
    const body = new PassThrough();
    const whole = wholeIfSmall(body, 64);
    body.destroy(new Error("client went away"));
    await expect(whole).rejects.toThrow("client went away");
  });

  it("leaves an error that comes after it to the reader that takes over", async () => {
    const body = new PassThrough();
    body.write(Buffer.alloc(100));
    expect(await wholeIfSmall(body, 64)).toBeNull();
    body.destroy(new Error("client went away"));
    await new Promise((resolve) => setImmediate(resolve));
    await expect(text(body)).rejects.toThrow("client went away");
  });
});
