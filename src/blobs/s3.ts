import { createHash } from "node:crypto";
import { pipeline, type Readable } from "node:stream";
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  PutBucketCorsCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { ByteCounter, checkRange } from "./byte-streams.js";
import { attachment } from "./content-disposition.js";
import { HashTap } from "./hash-tap.js";
import type { LocalBlobUrls } from "./local-urls.js";
import {
  BlobNotFoundError,
  type BlobStore,
  type ByteRange,
  type DownloadUrlOptions,
  type OpenedBlob,
  type PresignedRequest,
  type StoredBlob,
  type UploadUrlOptions,
} from "./port.js";
import type { UploadLeaseTable } from "./resumable/leases.js";
import { S3ResumableStore } from "./resumable/s3.js";
import { ResumableUploads } from "./resumable/uploads.js";
import { isNotFound, statusOf } from "./s3-errors.js";

export interface S3BlobStoreOptions {
  bucket: string;
  /** An S3-compatible service (MinIO, R2, …); unset: AWS. */
  endpoint?: string;
  /** Unset: the AWS default chain (AWS_REGION, profile), or us-east-1 with a custom endpoint. */
  region?: string;
  forcePathStyle?: boolean;
  /** Unset: the AWS default credential chain. */
  credentials?: S3ClientConfig["credentials"];
  /** This service's signed upload links: the tus uploads (decisions 7.1) go through the service. */
  uploadLinks: LocalBlobUrls;
  /** Bytes per part of a tus upload's multipart upload (at least 5 MiB). */
  resumablePartSize?: number;
  /** The tus uploads' leases shared with the other instances on this bucket; unset: this process alone. */
  uploadLeases?: UploadLeaseTable;
  /**
   * The endpoint presigned URLs name, when clients reach the store at another address than this
   * server does (MinIO in Compose: `minio:9000` inside, `localhost:9000` outside). A SigV4
   * signature covers the host, so the URLs are signed for that endpoint, not rewritten afterwards.
   */
  publicEndpoint?: string;
}

/** What a browser needs of the bucket: the web app PUTs and GETs presigned URLs from its origin. */
function corsRule(origins: string[]) {
  return {
    AllowedOrigins: origins,
    AllowedMethods: ["GET", "HEAD", "PUT"],
    AllowedHeaders: ["*"],
    ExposeHeaders: ["Content-Length", "Content-Range", "Content-Disposition", "ETag"],
    MaxAgeSeconds: 3600,
  };
}

/** Multipart upload: each part is buffered, so a put holds at most about (queueSize + 1) × partSize. */
const PART_SIZE = 8 * 1024 * 1024;
const QUEUE_SIZE = 4;
/** DeleteObjects takes at most this many keys a request. */
const DELETE_BATCH = 1000;
/** SigV4 presigned URLs live at most a week. */
const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;

/**
 * Blobs in an S3 bucket. Puts stream through lib-storage's multipart Upload (bounded memory);
 * upload and download URLs are real S3 presigned URLs, so file data never passes through this service.
 */
export class S3BlobStore implements BlobStore {
  readonly client: S3Client;
  /** Signs the URLs clients use: the client itself, or one for the public endpoint. */
  private readonly presigner: S3Client;
  private readonly bucket: string;
  private readonly uploadLinks: LocalBlobUrls;
  readonly resumable: ResumableUploads;

  constructor(options: S3BlobStoreOptions) {
    this.bucket = options.bucket;
    this.uploadLinks = options.uploadLinks;
    const settings = (endpoint: string | undefined) =>
      new S3Client({
        region: options.region ?? (endpoint ? (process.env.AWS_REGION ?? "us-east-1") : undefined),
        ...(endpoint ? { endpoint } : {}),
        ...(options.forcePathStyle !== undefined ? { forcePathStyle: options.forcePathStyle } : {}),
        ...(options.credentials ? { credentials: options.credentials } : {}),
        // Checksums only where S3 requires them (DeleteObjects). The newer default adds CRC32 trailers
        // that many S3-compatible services reject, and puts a checksum of the empty body into
        // presigned PUT URLs, which then refuse every real upload.
        requestChecksumCalculation: "WHEN_REQUIRED",
        responseChecksumValidation: "WHEN_REQUIRED",
      });
    this.client = settings(options.endpoint);
    this.presigner = options.publicEndpoint ? settings(options.publicEndpoint) : this.client;
    this.resumable = new ResumableUploads(
      new S3ResumableStore(this.client, this.bucket, options.resumablePartSize),
      options.uploadLeases,
    );
  }

  /**
   * Creates the bucket when it is missing and sets the CORS rule the web app needs (`origins`: the
   * web app's). Answers null, or what the store refused: MinIO's community edition takes no bucket
   * CORS rule (NotImplemented) and is configured server-wide instead (MINIO_API_CORS_ALLOW_ORIGIN).
   */
  async ensureBucket(origins: string[]): Promise<string | null> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
      await this.client.send(new CreateBucketCommand({ Bucket: this.bucket }));
    }
    try {
      await this.client.send(
        new PutBucketCorsCommand({
          Bucket: this.bucket,
          CORSConfiguration: { CORSRules: [corsRule(origins)] },
        }),
      );
      return null;
    } catch (error) {
      const name = (error as { name?: string }).name;
      if (name !== "NotImplemented" && statusOf(error) !== 501) throw error;
      return `the S3 service takes no bucket CORS rule (${name}); allow ${origins.join(", ")} in its own settings (MinIO: MINIO_API_CORS_ALLOW_ORIGIN)`;
    }
  }

  async put(
    key: string,
    body: Readable,
    options: { maxBytes: number | null; contentType?: string },
  ): Promise<StoredBlob> {
    const counter = new ByteCounter(options.maxBytes);
    const hash = createHash("sha256");
    let streamError: unknown = null;
    pipeline(body, new HashTap(hash), counter, (error) => {
      if (error && streamError === null) streamError = error;
    });
    const upload = new Upload({
      client: this.client,
      params: {
        Bucket: this.bucket,
        Key: key,
        Body: counter,
        ...(options.contentType ? { ContentType: options.contentType } : {}),
      },
      partSize: PART_SIZE,
      queueSize: QUEUE_SIZE,
      leavePartsOnError: false,
    });
    try {
      await upload.done();
      return { size: counter.bytes, sha256: hash.digest("hex") };
    } catch (error) {
      counter.destroy();
      await upload.abort().catch(() => {});
      if (upload.uploadId) {
        // lib-storage aborts on failure already; this covers that abort itself having failed.
        await this.client
          .send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: upload.uploadId }))
          .catch(() => {});
      }
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key })).catch(() => {});
      // Prefer the stream's own error (BlobTooLargeError, the source's failure) over what the
      // Upload reported after it, such as a failed abort.
      throw streamError ?? counter.errored ?? error;
    }
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    if (range) checkRange(range);
    try {
      const response = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
      return response.Body as Readable;
    } catch (error) {
      if (isNotFound(error)) throw new BlobNotFoundError(key);
      if (statusOf(error) === 416)
        throw new RangeError(`range ${range?.start}-${range?.end} not satisfiable`);
      throw error;
    }
  }

  /** A HEAD for the size, then a GET when read: two requests, as a stat and a get were. */
  async open(key: string): Promise<OpenedBlob | null> {
    const stat = await this.stat(key);
    if (!stat) return null;
    return {
      size: stat.size,
      read: (range) => this.get(key, range),
      bytes: async (range) => Buffer.concat(await (await this.get(key, range)).toArray()),
      close: async () => {},
    };
  }

  async stat(key: string): Promise<{ size: number } | null> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { size: head.ContentLength ?? 0 };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async delete(keys: string[]): Promise<void> {
    await this.resumable.remove(keys);
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      const batch = keys.slice(i, i + DELETE_BATCH);
      const result = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
        }),
      );
      const failed = (result.Errors ?? []).filter((e) => e.Code !== "NoSuchKey");
      if (failed.length > 0)
        throw new Error(
          `could not delete ${failed.length} blob(s): ${failed
            .slice(0, 5)
            .map((e) => `${e.Key} (${e.Code})`)
            .join(", ")}`,
        );
    }
  }

  /** A presigned PUT that signs Content-Type and Content-Length: the client must send exactly those. */
  async uploadUrl(key: string, options: UploadUrlOptions): Promise<PresignedRequest> {
    const url = await getSignedUrl(
      this.presigner,
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ContentType: options.contentType,
        ContentLength: options.size,
      }),
      {
        expiresIn: secondsUntil(options.expiresAt),
        signableHeaders: new Set(["content-type", "content-length"]),
      },
    );
    return {
      url,
      method: "PUT",
      headers: { "content-type": options.contentType },
      resumableUrl: this.uploadLinks.upload(key, options).url,
    };
  }

  /** A presigned GET that makes S3 answer as an attachment named `fileName`; honours Range. */
  async downloadUrl(key: string, options: DownloadUrlOptions): Promise<string> {
    return getSignedUrl(
      this.presigner,
      new GetObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ResponseContentDisposition: attachment(options.fileName),
        ResponseContentType: options.contentType,
      }),
      { expiresIn: secondsUntil(options.expiresAt) },
    );
  }

  async ping(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
  }

  close(): void {
    this.client.destroy();
    if (this.presigner !== this.client) this.presigner.destroy();
  }
}

/** Whole seconds from now until `expiresAt`, within what SigV4 allows (1 s to 7 days). */
function secondsUntil(expiresAt: Date): number {
  const seconds = Math.ceil((expiresAt.getTime() - Date.now()) / 1000);
  return Math.min(Math.max(seconds, 1), MAX_PRESIGN_SECONDS);
}
