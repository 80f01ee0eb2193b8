import { randomBytes } from "node:crypto";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { ListMultipartUploadsCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileSystemBlobStore } from "../../src/blobs/filesystem.js";
import { LocalBlobUrls } from "../../src/blobs/local-urls.js";
import { S3BlobStore, type S3BlobStoreOptions } from "../../src/blobs/s3.js";
import { UrlTokens } from "../../src/security/url-tokens.js";
import { tempDir } from "../support/databases.js";
import { startS3Server } from "../support/s3-server.js";
import { type BlobStoreUnderTest, blobStoreContract } from "./blob-store.contract.js";

const BASE_URL = "http://handoff.test:8080";

function onFileSystem(): { subject: BlobStoreUnderTest; root: string } {
  const dir = tempDir("handoff-blobs-");
  const urls = new LocalBlobUrls(new UrlTokens(randomBytes(32)), BASE_URL);
  const store = new FileSystemBlobStore(dir.path, urls);
  return {
    root: dir.path,
    subject: {
      store,
      urls: { kind: "local", urls, baseUrl: BASE_URL },
      // Every put goes through <root>/.tmp; a failed one must not leave its file there.
      // (Beside them, owners/ holds the store's heartbeat, no file data.)
      leftovers: async () =>
        (await readdir(join(dir.path, ".tmp")).catch(() => [])).filter((name) => name.endsWith(".part")),
      async close() {
        dir.remove();
      },
    },
  };
}

function onS3(
  options: Omit<S3BlobStoreOptions, "uploadLinks">,
  canListUploads: boolean,
  stop: () => Promise<void>,
): BlobStoreUnderTest {
  const uploadLinks = new LocalBlobUrls(new UrlTokens(randomBytes(32)), BASE_URL);
  const store = new S3BlobStore({ ...options, uploadLinks });
  return {
    store,
    urls: { kind: "presigned" },
    // Parts of a multipart upload that was never completed nor aborted stay (and cost) in the bucket.
    leftovers: canListUploads
      ? async (prefix) => {
          const open = await store.client.send(
            new ListMultipartUploadsCommand({ Bucket: options.bucket, Prefix: prefix }),
          );
          return (open.Uploads ?? []).map((u) => `${u.Key} (upload ${u.UploadId})`);
        }
      : null,
    async close() {
      store.close();
      await stop();
    },
  };
}

blobStoreContract("blob store contract on the filesystem", async () => onFileSystem().subject);

// s3rver has no ListMultipartUploads, so open uploads are only checked against real S3.
blobStoreContract("blob store contract on S3 (s3rver, in process)", async () => {
  const server = await startS3Server();
  return onS3(
    {
      bucket: server.bucket,
      endpoint: server.endpoint,
      region: server.region,
      forcePathStyle: true,
      credentials: server.credentials,
    },
    false,
    () => server.stop(),
  );
});

const realS3 = process.env.S3_ENDPOINT && process.env.S3_BUCKET;
blobStoreContract(
  "blob store contract on real S3",
  realS3
    ? async () =>
        onS3(
          {
            bucket: process.env.S3_BUCKET as string,
            endpoint: process.env.S3_ENDPOINT as string,
            ...(process.env.S3_REGION ? { region: process.env.S3_REGION } : {}),
            forcePathStyle: ["1", "true"].includes(process.env.S3_FORCE_PATH_STYLE ?? ""),
          },
          true,
          async () => {},
        )
    : null,
  realS3 ? "" : "no S3: set S3_ENDPOINT and S3_BUCKET (credentials from the AWS default chain)",
);

describe("filesystem blob store", () => {
  let subject: BlobStoreUnderTest;
  let root: string;
  beforeAll(() => {
    ({ subject, root } = onFileSystem());
  });
  afterAll(() => subject.close());

  it.each([
    "../outside",
    "transfers/../../outside",
    "/etc/passwd",
    "transfers//file",
    "transfers/./file",
    "transfers/file/",
    "",
    "a\\b",
    ".tmp/x",
  ])("refuses the key %j", async (key) => {
    const { store } = subject;
    await expect(store.put(key, Readable.from([Buffer.from("x")]), { maxBytes: null })).rejects.toThrow(
      /invalid blob key/,
    );
    await expect(store.get(key)).rejects.toThrow(/invalid blob key/);
    await expect(store.stat(key)).rejects.toThrow(/invalid blob key/);
    await expect(store.delete([key])).rejects.toThrow(/invalid blob key/);
    const expiresAt = new Date(Date.now() + 60_000);
    await expect(store.uploadUrl(key, { size: 1, contentType: "text/plain", expiresAt })).rejects.toThrow(
      /invalid blob key/,
    );
  });

  it("keeps blobs under the root at their key's path, and removes directories a delete left empty", async () => {
    const { store } = subject;
    await store.put("transfers/tr_x/file-1", Readable.from([Buffer.from("hello")]), { maxBytes: null });
    expect(await readdir(join(root, "transfers", "tr_x"))).toEqual(["file-1"]);
    await store.delete(["transfers/tr_x/file-1"]);
    expect(await readdir(root)).not.toContain("transfers");
  });

  it("fails ping when the root cannot be written", async () => {
    const dir = tempDir("handoff-blobs-");
    try {
      const notADir = join(dir.path, "file");
      await writeFile(notADir, "x");
      const urls = new LocalBlobUrls(new UrlTokens(randomBytes(32)), BASE_URL);
      await expect(new FileSystemBlobStore(notADir, urls).ping()).rejects.toThrow();
      await expect(new FileSystemBlobStore(join(dir.path, "new"), urls).ping()).resolves.toBeUndefined();
    } finally {
      dir.remove();
    }
  });
});
