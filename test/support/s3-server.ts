import { createReadStream, existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";

/** The part of @20minutes/s3rver (a maintained fork of s3rver, untyped) that the tests use. */
interface S3rver {
  middleware: KoaMiddleware[];
  store: FilesystemStore;
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}

interface StoredObject {
  content: Readable | null;
  range?: { start: number; end: number };
}

interface FilesystemStore {
  getObject(
    bucket: string,
    key: string,
    options?: { start?: number; end?: number },
  ): Promise<StoredObject | null>;
  getResourcePath(bucket: string, key: string | undefined, resource: "object" | "uploads"): string;
}

interface KoaContext {
  method: string;
  path: string;
  headers: object;
  query: Record<string, string | string[] | undefined>;
  status: number;
  type: string;
  body: unknown;
}

type KoaMiddleware = (ctx: KoaContext, next: () => Promise<void>) => Promise<void>;

interface SignatureV4 {
  getStringToSign(
    canonicalRequest: { uri: string; querystring: string; headers: object },
    request: unknown,
  ): string;
}

type S3rverConstructor = new (options: {
  address: string;
  port: number;
  directory: string;
  silent: boolean;
  vhostBuckets: boolean;
  configureBuckets: { name: string }[];
}) => S3rver;

export interface TestS3Server {
  endpoint: string;
  bucket: string;
  region: string;
  /** The server's fixed key pair; it checks SigV4 signatures, presigned URLs included. */
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** How many UploadPart requests it has answered: a multipart upload's progress, seen from S3. */
  partsUploaded(): number;
  stop(): Promise<void>;
}

const require = createRequire(import.meta.url);

/** The path of each request as sent, by its headers object (which the signature check is given). */
const requestPaths = new WeakMap<object, string>();
let signaturesFixed = false;

/**
 * Two places where s3rver's SigV4 check departs from SigV4, so that it rejects correctly signed
 * requests: it drops the trailing slash of a bucket-level path (`/bucket/`, as the AWS SDK sends
 * HeadBucket and DeleteObjects), and it encodes query values with encodeURIComponent, which leaves
 * `!'()*` as they are (a presigned `response-content-disposition` with `filename*=UTF-8''…`).
 */
function fixSignatureCheck(): void {
  if (signaturesFixed) return;
  signaturesFixed = true;
  const v4 = require("@20minutes/s3rver/lib/signature/v4.js") as SignatureV4;
  const original = v4.getStringToSign.bind(v4);
  v4.getStringToSign = (canonicalRequest, request) => {
    const path = requestPaths.get(canonicalRequest.headers);
    const uri =
      path?.endsWith("/") && !canonicalRequest.uri.endsWith("/")
        ? `${canonicalRequest.uri}/`
        : canonicalRequest.uri;
    const querystring = canonicalRequest.querystring.replace(
      /[!'()*]/g,
      (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
    );
    return original({ ...canonicalRequest, uri, querystring }, request);
  };
}

/** s3rver reads `Range: bytes=0-0` as the whole object (it takes an end of 0 for none); serve the one byte. */
function fixFirstByteRange(store: FilesystemStore): void {
  const getObject = store.getObject.bind(store);
  store.getObject = async (bucket, key, options) => {
    const object = await getObject(bucket, key, options);
    if (options?.end === 0 && (options.start ?? 0) === 0 && object?.content) {
      object.content.destroy();
      object.content = createReadStream(store.getResourcePath(bucket, key, "object"), { start: 0, end: 0 });
      object.range = { start: 0, end: 0 };
    }
    return object;
  };
}

const xml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * The two multipart calls s3rver lacks, over its own upload folders (`uploads/{id}/key` names the
 * object): AbortMultipartUpload (`DELETE /bucket/key?uploadId=`: 204, or 404 NoSuchUpload) and
 * ListMultipartUploads (`GET /bucket?uploads&prefix=`, one page). They skip the signature check.
 */
function multipartUploadCalls(store: FilesystemStore): KoaMiddleware {
  const folder = (bucket: string) => store.getResourcePath(bucket, undefined, "uploads");
  return async (ctx, next) => {
    const [, bucket = "", ...rest] = ctx.path.split("/");
    const key = decodeURIComponent(rest.join("/"));
    const uploadId = ctx.query.uploadId;
    if (ctx.method === "DELETE" && key && typeof uploadId === "string") {
      const dir = join(folder(bucket), uploadId);
      if (!/^[0-9a-f]+$/.test(uploadId) || !existsSync(dir)) {
        ctx.status = 404;
        ctx.type = "application/xml";
        ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>`;
        return;
      }
      await rm(dir, { recursive: true, force: true });
      ctx.status = 204;
      return;
    }
    if (ctx.method === "GET" && !key && "uploads" in ctx.query) {
      const prefix = typeof ctx.query.prefix === "string" ? ctx.query.prefix : "";
      const uploads: string[] = [];
      for (const id of existsSync(folder(bucket)) ? await readdir(folder(bucket)) : []) {
        const named = await readFile(join(folder(bucket), id, "key"), "utf8").catch(() => null);
        if (named?.startsWith(prefix))
          uploads.push(`<Upload><Key>${xml(named)}</Key><UploadId>${id}</UploadId></Upload>`);
      }
      ctx.type = "application/xml";
      ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<ListMultipartUploadsResult><Bucket>${xml(bucket)}</Bucket><Prefix>${xml(prefix)}</Prefix><IsTruncated>false</IsTruncated>${uploads.join("")}</ListMultipartUploadsResult>`;
      return;
    }
    await next();
  };
}

/**
 * An S3-compatible server in this process on 127.0.0.1 and a free port, storing under a temp dir,
 * with one bucket (or none yet, with `createBucket: false`). It verifies SigV4 signatures (headers
 * and presigned query), and does multipart uploads (AbortMultipartUpload and ListMultipartUploads
 * added here) and Range.
 */
export async function startS3Server(
  bucket = "handoff-test",
  { createBucket = true }: { createBucket?: boolean } = {},
): Promise<TestS3Server> {
  const S3rver = require("@20minutes/s3rver") as S3rverConstructor;
  fixSignatureCheck();
  const dir = await mkdtemp(join(tmpdir(), "handoff-s3-"));
  const removeDir = () => rm(dir, { recursive: true, force: true });
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    directory: dir,
    silent: true,
    vhostBuckets: false,
    configureBuckets: createBucket ? [{ name: bucket }] : [],
  });
  fixFirstByteRange(server.store);
  let parts = 0;
  server.middleware.unshift(async (ctx, next) => {
    requestPaths.set(ctx.headers, ctx.path);
    await next();
    if (ctx.method === "PUT" && ctx.query.partNumber !== undefined) parts++;
  }, multipartUploadCalls(server.store));
  try {
    const { port } = await server.run();
    return {
      endpoint: `http://127.0.0.1:${port}`,
      bucket,
      region: "us-east-1",
      credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
      partsUploaded: () => parts,
      async stop() {
        await server.close();
        await removeDir();
      },
    };
  } catch (error) {
    await removeDir();
    throw error;
  }
}

/** s3rver as a service's blob store: the S3_* settings that point the service at it. */
export interface TestS3Store {
  env: Record<string, string>;
  server: TestS3Server;
  stop(): Promise<void>;
}

/**
 * Starts s3rver for a service in this process: its key pair goes into AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY (where the AWS SDK reads credentials) until `stop()` puts them back.
 */
export async function startS3Store(): Promise<TestS3Store> {
  const saved = {
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY,
  };
  const s3 = await startS3Server();
  process.env.AWS_ACCESS_KEY_ID = s3.credentials.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = s3.credentials.secretAccessKey;
  return {
    server: s3,
    env: {
      S3_BUCKET: s3.bucket,
      S3_ENDPOINT: s3.endpoint,
      S3_REGION: s3.region,
      S3_FORCE_PATH_STYLE: "true",
    },
    async stop() {
      await s3.stop();
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    },
  };
}
