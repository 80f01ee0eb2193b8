import { createHash, randomBytes, randomUUID } from "node:crypto";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalBlobUrls } from "../../src/blobs/local-urls.js";
import {
  BlobNotFoundError,
  type BlobStore,
  BlobTooLargeError,
  type OpenedBlob,
} from "../../src/blobs/port.js";
import { titled } from "../support/databases.js";

export interface BlobStoreUnderTest {
  store: BlobStore;
  /**
   * How its upload and download URLs are checked: `presigned` ones are used over HTTP; this
   * service's own (`local`) are checked for shape and verified, their routes being tested elsewhere.
   */
  urls: { kind: "presigned" } | { kind: "local"; urls: LocalBlobUrls; baseUrl: string };
  /** What failed puts under `prefix` may have left behind (temp files, open multipart uploads); null: cannot tell. */
  leftovers: ((prefix: string) => Promise<string[]>) | null;
  close(): Promise<void>;
}

const KiB = 1024;
const MiB = 1024 * KiB;

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

/** Compares bytes by length and hash, so a mismatch does not print megabytes. */
const same = (actual: Buffer, expected: Buffer) =>
  expect({ length: actual.length, sha256: sha256(actual) }).toEqual({
    length: expected.length,
    sha256: sha256(expected),
  });

/** A body in chunks of at most 64 KiB, as a request body arrives. */
function chunked(data: Buffer, chunkSize = 64 * KiB): Readable {
  const chunks: Buffer[] = [];
  for (let i = 0; i < data.length; i += chunkSize) chunks.push(data.subarray(i, i + chunkSize));
  return Readable.from(chunks);
}

/** `size` random bytes made as they are read, never held whole; counts what was produced and hashes it. */
function generated(size: number, failWith: Error | null = null) {
  const made = { bytes: 0, hash: createHash("sha256") };
  const stream = Readable.from(
    (async function* () {
      while (made.bytes < size) {
        const chunk = randomBytes(Math.min(64 * KiB, size - made.bytes));
        made.bytes += chunk.length;
        made.hash.update(chunk);
        yield chunk;
      }
      if (failWith) throw failWith;
    })(),
  );
  return { stream, made };
}

/** An opened blob that must be there. */
function opened(blob: OpenedBlob | null): OpenedBlob {
  if (!blob) throw new Error("the blob is missing");
  return blob;
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Reads a stream to its end keeping only its size and sha256. */
async function digest(stream: Readable): Promise<{ size: number; sha256: string }> {
  const hash = createHash("sha256");
  let size = 0;
  await pipeline(
    stream,
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        size += chunk.length;
        callback();
      },
    }),
  );
  return { size, sha256: hash.digest("hex") };
}

/** Runs `work` while sampling the resident set size; answers how far it rose above where it started. */
async function rssGrowth(work: () => Promise<void>): Promise<number> {
  const start = process.memoryUsage.rss();
  let peak = start;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 5);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return Math.max(peak, process.memoryUsage.rss()) - start;
}

const inAMinute = () => new Date(Date.now() + 60_000);

/** The blob store contract: every adapter must pass every case. */
export function blobStoreContract(
  title: string,
  open: (() => Promise<BlobStoreUnderTest>) | null,
  skipReason = "",
) {
  describe.skipIf(open === null)(titled(title, skipReason), () => {
    let subject: BlobStoreUnderTest;
    let store: BlobStore;
    const prefix = `contract/${randomUUID()}`;
    const written = new Set<string>();
    /** A fresh key under this run's prefix, removed after the suite. */
    const key = (label: string) => {
      const k = `${prefix}/${label}-${randomUUID()}`;
      written.add(k);
      return k;
    };

    beforeAll(async () => {
      subject = await (open as () => Promise<BlobStoreUnderTest>)();
      store = subject.store;
    });
    afterAll(async () => {
      if (!subject) return;
      try {
        await subject.store.delete([...written]);
      } finally {
        await subject.close();
      }
    });

    it("answers ping", async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });

    it.each([0, 1, 1000, 64 * KiB, 64 * KiB + 1, 3 * MiB + 17])(
      "round-trips %i bytes unchanged, the put answering their size and SHA-256",
      async (size) => {
        const data = randomBytes(size);
        const k = key(`size-${size}`);
        expect(
          await store.put(k, chunked(data), { maxBytes: null, contentType: "application/octet-stream" }),
        ).toEqual({ size, sha256: sha256(data) });
        expect(await store.stat(k)).toEqual({ size });
        same(await readAll(await store.get(k)), data);
      },
    );

    it("streams a large blob in and out with flat memory", { timeout: 300_000 }, async () => {
      const size = 256 * MiB;
      const k = key("large");
      const { stream, made } = generated(size);
      let stored: { size: number; sha256: string } | undefined;
      let read: { size: number; sha256: string } | undefined;
      const growth = await rssGrowth(async () => {
        stored = await store.put(k, stream, { maxBytes: size });
        read = await digest(await store.get(k));
      });
      const hash = made.hash.digest("hex");
      expect(stored).toEqual({ size, sha256: hash });
      expect(read).toEqual({ size, sha256: hash });
      // Holding the blob whole would take 256 MiB; a multipart upload holds a few parts of 8 MiB.
      expect(growth).toBeLessThan(160 * MiB);
    });

    it("reads byte ranges: first byte, middle, last byte, all, and an end past the last byte", async () => {
      const data = randomBytes(MiB + 3);
      const last = data.length - 1;
      const k = key("range");
      await store.put(k, chunked(data), { maxBytes: null });
      const range = async (start: number, end: number) => readAll(await store.get(k, { start, end }));
      same(await range(0, 0), data.subarray(0, 1));
      same(await range(1000, 200_000), data.subarray(1000, 200_001));
      same(await range(last, last), data.subarray(last));
      same(await range(0, last), data);
      same(await range(last - 9, last + 100), data.subarray(last - 9));
    });

    it("opens a blob to serve it: its size, then the whole or a range; null when missing", async () => {
      const data = randomBytes(70_000);
      const k = key("open");
      expect(await store.open(k)).toBeNull();
      await store.put(k, chunked(data), { maxBytes: null });
      const whole = await store.open(k);
      expect(whole?.size).toBe(data.length);
      same(await readAll(await (whole as OpenedBlob).read()), data);
      const ranged = await store.open(k);
      same(
        await readAll(await (ranged as OpenedBlob).read({ start: 65_530, end: 80_000 })),
        data.subarray(65_530),
      );
      same(await opened(await store.open(k)).bytes(), data);
      same(await opened(await store.open(k)).bytes({ start: 65_530, end: 80_000 }), data.subarray(65_530));
      same(await opened(await store.open(k)).bytes({ start: 10, end: 19 }), data.subarray(10, 20));
      // Opened and let go unread: the key can still be replaced and deleted.
      await (await store.open(k))?.close();
      await store.delete([k]);
      expect(await store.open(k)).toBeNull();
    });

    it("stats a blob's size, and null for a missing one", async () => {
      const k = key("stat");
      expect(await store.stat(k)).toBeNull();
      await store.put(k, chunked(randomBytes(12_345)), { maxBytes: 12_345 });
      expect(await store.stat(k)).toEqual({ size: 12_345 });
    });

    it("replaces a blob put again under the same key", async () => {
      const k = key("replace");
      await store.put(k, chunked(randomBytes(5000)), { maxBytes: null });
      const second = randomBytes(300);
      await store.put(k, chunked(second), { maxBytes: null });
      expect(await store.stat(k)).toEqual({ size: 300 });
      same(await readAll(await store.get(k)), second);
    });

    it("deletes blobs, and deleting missing ones or none is fine", async () => {
      const a = key("delete-a");
      const b = key("delete-b");
      const kept = key("delete-kept");
      for (const k of [a, b, kept]) await store.put(k, chunked(randomBytes(100)), { maxBytes: null });
      await store.delete([a, b, key("delete-never")]);
      expect(await store.stat(a)).toBeNull();
      expect(await store.stat(b)).toBeNull();
      expect(await store.stat(kept)).toEqual({ size: 100 });
      await expect(store.get(a)).rejects.toBeInstanceOf(BlobNotFoundError);
      await expect(store.delete([a])).resolves.toBeUndefined();
      await expect(store.delete([])).resolves.toBeUndefined();
    });

    it("rejects a get of a missing blob with BlobNotFoundError, whole or ranged", async () => {
      const k = key("missing");
      await expect(store.get(k)).rejects.toBeInstanceOf(BlobNotFoundError);
      await expect(store.get(k, { start: 0, end: 9 })).rejects.toMatchObject({
        name: "BlobNotFoundError",
        key: k,
      });
    });

    it("takes exactly maxBytes, and rejects one byte more with BlobTooLargeError leaving no blob", async () => {
      const exact = key("max-exact");
      expect(await store.put(exact, chunked(randomBytes(1000)), { maxBytes: 1000 })).toMatchObject({
        size: 1000,
      });
      const over = key("max-over");
      const put = store.put(over, chunked(randomBytes(1001)), { maxBytes: 1000 });
      await expect(put).rejects.toBeInstanceOf(BlobTooLargeError);
      await expect(put).rejects.toMatchObject({ maxBytes: 1000 });
      expect(await store.stat(over)).toBeNull();
      if (subject.leftovers) expect(await subject.leftovers(prefix)).toEqual([]);
    });

    it.each([
      ["below one upload part", 1 * MiB],
      ["over several upload parts", 20 * MiB],
    ])("stops reading a too-large body as soon as it passes maxBytes (%s)", async (_label, maxBytes) => {
      const k = key("too-large");
      const { stream, made } = generated(1024 * MiB);
      await expect(store.put(k, stream, { maxBytes })).rejects.toBeInstanceOf(BlobTooLargeError);
      // Read just past the limit, not to the body's end.
      expect(made.bytes).toBeGreaterThan(maxBytes);
      expect(made.bytes).toBeLessThan(maxBytes + 8 * MiB);
      expect(await store.stat(k)).toBeNull();
      if (subject.leftovers) expect(await subject.leftovers(prefix)).toEqual([]);
    });

    it.each([
      ["a small body", 100 * KiB],
      ["a body over several upload parts", 20 * MiB],
    ])("leaves nothing behind when the source stream fails (%s)", async (_label, size) => {
      const k = key("failing");
      const { stream } = generated(size, new Error("client went away"));
      await expect(store.put(k, stream, { maxBytes: null })).rejects.toThrow("client went away");
      expect(await store.stat(k)).toBeNull();
      await expect(store.get(k)).rejects.toBeInstanceOf(BlobNotFoundError);
      if (subject.leftovers) expect(await subject.leftovers(prefix)).toEqual([]);
    });

    it("gives signed local upload and download URLs that carry what they allow", async (ctx) => {
      const urls = subject.urls;
      if (urls.kind !== "local") return ctx.skip("its URLs are presigned: used over HTTP below");
      const k = key("local-urls");
      const expiresAt = inAMinute();
      const upload = await store.uploadUrl(k, { size: 1234, contentType: "text/csv", expiresAt });
      expect(upload.method).toBe("PUT");
      expect(upload.headers).toEqual({ "content-type": "text/csv" });
      const uploadToken = upload.url.match(/^(.*)\/v1\/uploads\/([^/?#]+)$/);
      expect(uploadToken?.[1]).toBe(urls.baseUrl);
      const uploadClaims = urls.urls.uploadClaims(uploadToken?.[2] ?? "", new Date());
      expect(uploadClaims).toEqual({
        op: "put",
        key: k,
        size: 1234,
        ct: "text/csv",
        exp: expiresAt.getTime(),
      });
      expect(urls.urls.uploadClaims(uploadToken?.[2] ?? "", new Date(expiresAt.getTime() + 1))).toBeNull();
      expect(urls.urls.downloadClaims(uploadToken?.[2] ?? "", new Date())).toBeNull();

      const download = await store.downloadUrl(k, {
        fileName: "report.csv",
        contentType: "text/csv",
        expiresAt,
      });
      const downloadToken = download.match(/^(.*)\/v1\/files\/([^/?#]+)$/);
      expect(downloadToken?.[1]).toBe(urls.baseUrl);
      expect(urls.urls.downloadClaims(downloadToken?.[2] ?? "", new Date())).toEqual({
        op: "get",
        key: k,
        fn: "report.csv",
        ct: "text/csv",
        exp: expiresAt.getTime(),
      });
      expect(
        urls.urls.downloadClaims(downloadToken?.[2] ?? "", new Date(expiresAt.getTime() + 1)),
      ).toBeNull();
      const forged = `${downloadToken?.[2]?.split(".")[0]}.${"A".repeat(43)}`;
      expect(urls.urls.downloadClaims(forged, new Date())).toBeNull();
    });

    it("gives presigned upload and download URLs that work over HTTP, Range included", async (ctx) => {
      if (subject.urls.kind !== "presigned")
        return ctx.skip("its URLs are this service's own: routes tested elsewhere");
      const k = key("presigned");
      const data = randomBytes(100_000);
      const upload = await store.uploadUrl(k, {
        size: data.length,
        contentType: "application/pdf",
        expiresAt: inAMinute(),
      });
      expect(upload.method).toBe("PUT");
      expect(upload.headers).toMatchObject({ "content-type": "application/pdf" });

      // Signed for that content type and size: a request without them is refused.
      const bare = await fetch(upload.url, { method: "PUT", body: data });
      expect(bare.ok).toBe(false);
      const longer = await fetch(upload.url, {
        method: "PUT",
        headers: upload.headers,
        body: Buffer.concat([data, Buffer.from("x")]),
      });
      expect(longer.ok).toBe(false);
      expect(await store.stat(k)).toBeNull();

      const put = await fetch(upload.url, { method: upload.method, headers: upload.headers, body: data });
      expect(put.status).toBe(200);
      expect(await store.stat(k)).toEqual({ size: data.length });
      same(await readAll(await store.get(k)), data);

      const fileName = 'Q3 "final" résumé.pdf';
      const download = await store.downloadUrl(k, {
        fileName,
        contentType: "application/pdf",
        expiresAt: inAMinute(),
      });
      const whole = await fetch(download);
      expect(whole.status).toBe(200);
      expect(whole.headers.get("content-type")).toBe("application/pdf");
      const disposition = whole.headers.get("content-disposition") ?? "";
      expect(disposition).toMatch(/^attachment;/);
      expect(disposition).toContain(`filename*=UTF-8''${encodeURIComponent(fileName)}`);
      same(Buffer.from(await whole.arrayBuffer()), data);

      const ranged = await fetch(download, { headers: { range: "bytes=1000-1999" } });
      expect(ranged.status).toBe(206);
      expect(ranged.headers.get("content-range")).toBe(`bytes 1000-1999/${data.length}`);
      same(Buffer.from(await ranged.arrayBuffer()), data.subarray(1000, 2000));

      const tampered = new URL(download);
      tampered.searchParams.set("response-content-type", "text/html");
      expect((await fetch(tampered)).ok).toBe(false);
    });
  });
}
