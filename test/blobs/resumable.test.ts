import { createHash, randomBytes } from "node:crypto";
import { appendFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { PassThrough, Readable } from "node:stream";
import { ListMultipartUploadsCommand, ListObjectsV2Command, UploadPartCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileSystemBlobStore } from "../../src/blobs/filesystem.js";
import { LocalBlobUrls } from "../../src/blobs/local-urls.js";
import { type BlobStore, BlobTooLargeError } from "../../src/blobs/port.js";
import {
  type AppendRequest,
  ChecksumMismatchError,
  OffsetMismatchError,
  type UploadTarget,
  UploadTerminatedError,
} from "../../src/blobs/resumable/port.js";
import { MIN_PART_SIZE } from "../../src/blobs/resumable/s3.js";
import { S3BlobStore } from "../../src/blobs/s3.js";
import { UrlTokens } from "../../src/security/url-tokens.js";
import { tempDir } from "../support/databases.js";
import { startS3Server, type TestS3Server } from "../support/s3-server.js";

const MiB = 1024 * 1024;
const links = new LocalBlobUrls(new UrlTokens(randomBytes(32)), "http://handoff.test");

interface Backing {
  /** A store over the backing storage: a new one is the service after a restart. */
  open(): BlobStore;
  /** Sizes of the parts uploaded to S3 so far; null on the filesystem. */
  partSizes: number[] | null;
  /** Bytes the crash of a request left past the committed offset (filesystem only). */
  crashLeftover?(key: string, bytes: Buffer): Promise<void>;
  close(): Promise<void>;
}

async function onFileSystem(): Promise<Backing> {
  const dir = tempDir("handoff-resumable-");
  return {
    open: () => new FileSystemBlobStore(dir.path, links),
    partSizes: null,
    crashLeftover: (key, bytes) => appendFile(join(dir.path, ".resumable", key, "data"), bytes),
    async close() {
      dir.remove();
    },
  };
}

/** A blob store on the test S3 server: a new one is the service after a restart. */
const s3Store = (server: TestS3Server) =>
  new S3BlobStore({
    bucket: server.bucket,
    endpoint: server.endpoint,
    region: server.region,
    forcePathStyle: true,
    credentials: server.credentials,
    uploadLinks: links,
  });

async function onS3(): Promise<Backing> {
  const server = await startS3Server();
  const partSizes: number[] = [];
  const stores: S3BlobStore[] = [];
  return {
    open() {
      const store = s3Store(server);
      const send = store.client.send.bind(store.client);
      store.client.send = ((command: unknown, ...rest: unknown[]) => {
        if (command instanceof UploadPartCommand) partSizes.push(command.input.ContentLength ?? -1);
        return (send as (...args: unknown[]) => unknown)(command, ...rest);
      }) as typeof store.client.send;
      stores.push(store);
      return store;
    },
    partSizes,
    async close() {
      for (const store of stores) store.close();
      await server.stop();
    },
  };
}

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
const digest = (algorithm: "sha1" | "sha256", data: Buffer) => createHash(algorithm).update(data).digest();

let keys = 0;
function targetOf(length: number): UploadTarget {
  keys++;
  return {
    key: `transfers/tr_${keys}/f_file`,
    length,
    contentType: "application/octet-stream",
    expiresAt: new Date(Date.now() + 3600_000),
  };
}

function request(offset: number, data: Buffer, extra: Partial<AppendRequest> = {}): AppendRequest {
  const chunks: Buffer[] = [];
  for (let i = 0; i < data.length; i += 256 * 1024) chunks.push(data.subarray(i, i + 256 * 1024));
  return { offset, body: Readable.from(chunks), checksum: null, interimCommits: false, ...extra };
}

/** A body that delivers `data` and then breaks off, as a dropped connection does. */
function brokenOff(data: Buffer): Readable {
  return Readable.from(
    (async function* () {
      yield data;
      throw new Error("connection reset");
    })(),
  );
}

async function stored(store: BlobStore, key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await store.get(key)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const never = () => {};

for (const [name, backingOf] of [
  ["filesystem", onFileSystem],
  ["S3 (s3rver)", onS3],
] as const) {
  describe(`tus uploads on the ${name} store`, () => {
    let backing: Backing;
    let store: BlobStore;
    beforeAll(async () => {
      backing = await backingOf();
      store = backing.open();
    });
    afterAll(() => backing.close());

    it("appends PATCH after PATCH and stores the whole file at its key, byte-exact", async () => {
      const data = randomBytes(13 * MiB + 123);
      const target = targetOf(data.length);
      expect(await store.resumable.offset(target)).toBe(0);
      const cuts = [3 * MiB + 1, 9 * MiB + 7, data.length];
      let offset = 0;
      for (const cut of cuts) {
        offset = await store.resumable.append(target, request(offset, data.subarray(offset, cut)), never);
        expect(offset).toBe(cut);
      }
      expect(await store.resumable.offset(target)).toBe(data.length);
      expect(sha256(await stored(store, target.key))).toBe(sha256(data));
      if (backing.partSizes) {
        // Every part but the last is at least 5 MiB, the tail kept between requests.
        expect(backing.partSizes.slice(0, -1).every((size) => size >= MIN_PART_SIZE)).toBe(true);
        expect(backing.partSizes.reduce((a, b) => a + b, 0)).toBe(data.length);
      }
    });

    it("refuses a wrong offset with the current one, keeping nothing", async () => {
      const data = randomBytes(1000);
      const target = targetOf(data.length);
      await store.resumable.append(target, request(0, data.subarray(0, 400)), never);
      const wrong = store.resumable.append(target, request(300, data.subarray(300)), never);
      await expect(wrong).rejects.toEqual(new OffsetMismatchError(400));
      expect(await store.resumable.offset(target)).toBe(400);
    });

    it("keeps nothing of a request whose checksum fails, and appends one whose checksum holds", async () => {
      const data = randomBytes(6 * MiB);
      const target = targetOf(data.length);
      await store.resumable.append(target, request(0, data.subarray(0, MiB)), never);
      for (const algorithm of ["sha1", "sha256"] as const) {
        const bad = request(MiB, data.subarray(MiB), {
          checksum: { algorithm, digest: digest(algorithm, data.subarray(0, 10)) },
        });
        await expect(store.resumable.append(target, bad, never)).rejects.toBeInstanceOf(
          ChecksumMismatchError,
        );
        expect(await store.resumable.offset(target)).toBe(MiB);
      }
      const good = request(MiB, data.subarray(MiB), {
        checksum: { algorithm: "sha1", digest: digest("sha1", data.subarray(MiB)) },
      });
      expect(await store.resumable.append(target, good, never)).toBe(data.length);
      expect(sha256(await stored(store, target.key))).toBe(sha256(data));
    });

    it("refuses bytes past the declared size, keeping nothing of that request", async () => {
      const data = randomBytes(2000);
      const target = targetOf(1500);
      await store.resumable.append(target, request(0, data.subarray(0, 500)), never);
      await expect(
        store.resumable.append(target, request(500, data.subarray(500)), never),
      ).rejects.toBeInstanceOf(BlobTooLargeError);
      expect(await store.resumable.offset(target)).toBe(500);
    });

    it("keeps what arrived before the connection broke off, and resumes from there", async () => {
      const data = randomBytes(7 * MiB);
      const target = targetOf(data.length);
      const cut = 6 * MiB + 5;
      const broken = { ...request(0, data), body: brokenOff(data.subarray(0, cut)) };
      await expect(store.resumable.append(target, broken, never)).rejects.toThrow("connection reset");
      expect(await store.resumable.offset(target)).toBe(cut);
      await store.resumable.append(target, request(cut, data.subarray(cut)), never);
      expect(sha256(await stored(store, target.key))).toBe(sha256(data));
    });

    it("survives a restart: a new store continues from the committed offset, ignoring uncommitted bytes", async () => {
      const data = randomBytes(6 * MiB + 99);
      const target = targetOf(data.length);
      await store.resumable.append(target, request(0, data.subarray(0, 2 * MiB)), never);
      // A request killed mid-way (kill -9) left bytes that were never acknowledged.
      await backing.crashLeftover?.(target.key, randomBytes(4096));
      const restarted = backing.open();
      expect(await restarted.resumable.offset(target)).toBe(2 * MiB);
      await restarted.resumable.append(target, request(2 * MiB, data.subarray(2 * MiB)), never);
      expect(sha256(await stored(restarted, target.key))).toBe(sha256(data));
    });

    it("lets only one of two racing PATCHes append: the second sees the first's offset", async () => {
      const data = randomBytes(3 * MiB);
      const target = targetOf(data.length);
      const slow = new PassThrough();
      const first = store.resumable.append(target, { ...request(0, data), body: slow }, () => slow.destroy());
      slow.write(data.subarray(0, MiB));
      // Once the first request has taken its megabyte in, the second one arrives.
      while (slow.readableLength > 0 || slow.writableLength > 0) await new Promise((r) => setTimeout(r, 20));
      await new Promise((resolve) => setTimeout(resolve, 100));
      const second = store.resumable.append(target, request(0, data), never);
      await expect(first).rejects.toThrow();
      await expect(second).rejects.toEqual(new OffsetMismatchError(MiB));
      await store.resumable.append(target, request(MiB, data.subarray(MiB)), never);
      expect(sha256(await stored(store, target.key))).toBe(sha256(data));
    });

    it("terminates: the bytes go, later requests are refused", async () => {
      const data = randomBytes(5000);
      const target = targetOf(data.length);
      await store.resumable.append(target, request(0, data.subarray(0, 100)), never);
      await store.resumable.terminate(target);
      expect(await store.resumable.offset(target)).toBe("terminated");
      await expect(
        store.resumable.append(target, request(100, data.subarray(100)), never),
      ).rejects.toBeInstanceOf(UploadTerminatedError);
      expect(await store.stat(target.key)).toBeNull();
    });

    it("purges partial uploads once their link expired, and the transfer's delete removes them too", async () => {
      const expiring = { ...targetOf(1000), expiresAt: new Date(Date.now() + 60_000) };
      const deleted = targetOf(1000);
      for (const target of [expiring, deleted])
        await store.resumable.append(target, request(0, randomBytes(10)), never);
      expect(await store.resumable.purgeExpired(new Date(Date.now() + 30_000))).toBe(0);
      expect(await store.resumable.purgeExpired(new Date(Date.now() + 120_000))).toBe(1);
      expect(await store.resumable.offset(expiring)).toBe(0);
      await store.delete([deleted.key]);
      expect(await store.resumable.offset(deleted)).toBe(0);
    });

    it("stores an empty file as soon as it is looked at: there is nothing to PATCH", async () => {
      const target = targetOf(0);
      expect(await store.resumable.offset(target)).toBe(0);
      expect(await store.stat(target.key)).toEqual({ size: 0 });
    });
  });
}

describe("the filesystem store's upload area", () => {
  it("keeps uploads out of the temporary files a crash sweep removes", async () => {
    const dir = tempDir("handoff-resumable-");
    const store = new FileSystemBlobStore(dir.path, links);
    const target = targetOf(100);
    await store.resumable.append(target, request(0, randomBytes(10)), never);
    expect(await store.leftovers?.removeAbandonedParts()).toBe(0);
    expect(await readdir(join(dir.path, ".resumable", target.key))).toEqual(["data", "state.json"]);
    dir.remove();
  });
});

describe("the S3 store's partial uploads (s3rver)", () => {
  let server: TestS3Server;
  let store: S3BlobStore;
  beforeAll(async () => {
    server = await startS3Server();
    store = s3Store(server);
  });
  afterAll(async () => {
    store.close();
    await server.stop();
  });

  /** What S3 holds for an upload: its multipart uploads in progress, and every object at or under its key. */
  async function leftOf(key: string) {
    const uploads = await store.client.send(
      new ListMultipartUploadsCommand({ Bucket: server.bucket, Prefix: key }),
    );
    const objects: string[] = [];
    for (const prefix of [key, `.resumable/${key}`]) {
      const page = await store.client.send(
        new ListObjectsV2Command({ Bucket: server.bucket, Prefix: prefix }),
      );
      for (const object of page.Contents ?? []) objects.push(object.Key as string);
    }
    return { uploads: (uploads.Uploads ?? []).map((upload) => upload.Key), objects };
  }

  /** One part of the store's 8 MiB, and 1000 bytes that wait in the tail object. */
  const partAndTail = () => randomBytes(8 * MiB + 1000);

  it("aborts the multipart upload and removes its tail when the link expires, and when terminated", async () => {
    const expiring = { ...targetOf(16 * MiB), expiresAt: new Date(Date.now() + 60_000) };
    const terminated = { ...targetOf(16 * MiB), expiresAt: new Date(Date.now() + 60_000) };
    for (const target of [expiring, terminated]) {
      await store.resumable.append(target, request(0, partAndTail()), never);
      const before = await leftOf(target.key);
      expect(before.uploads, "one part in S3's multipart upload").toEqual([target.key]);
      expect(
        before.objects.some((key) => key.endsWith("/tail-1")),
        "the tail stored",
      ).toBe(true);
    }

    await store.resumable.terminate(terminated);
    expect(await leftOf(terminated.key)).toEqual({
      uploads: [],
      objects: [`.resumable/${terminated.key}/state.json`], // the tombstone, until the link expires
    });

    expect(await store.resumable.purgeExpired(new Date(Date.now() + 120_000))).toBe(2);
    for (const target of [expiring, terminated])
      expect(await leftOf(target.key)).toEqual({ uploads: [], objects: [] });
  });

  it("aborts, once the link expires, a multipart upload whose request the server crashed in", async () => {
    const target = { ...targetOf(16 * MiB), expiresAt: new Date(Date.now() + 60_000) };
    const crashing = s3Store(server);
    // The process dies right after S3 stored the first part: nothing it sends afterwards arrives.
    const send = crashing.client.send.bind(crashing.client);
    let dead = false;
    crashing.client.send = (async (command: unknown, ...rest: unknown[]) => {
      if (dead) throw new Error("the server process is gone");
      const answer = await (send as (...args: unknown[]) => Promise<unknown>)(command, ...rest);
      if (command instanceof UploadPartCommand) dead = true;
      return answer;
    }) as typeof crashing.client.send;
    await expect(crashing.resumable.append(target, request(0, partAndTail()), never)).rejects.toThrow(/gone/);
    crashing.close();
    expect((await leftOf(target.key)).uploads).toEqual([target.key]);

    // After the restart, the next purge past the link's expiry.
    const restarted = s3Store(server);
    expect(await restarted.resumable.offset(target)).toBe(0);
    await restarted.resumable.purgeExpired(new Date(Date.now() + 120_000));
    restarted.close();
    expect(await leftOf(target.key)).toEqual({ uploads: [], objects: [] });
  });
});
