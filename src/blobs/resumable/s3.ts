import { createHash } from "node:crypto";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { BlobTooLargeError } from "../errors.js";
import { isNotFound } from "../s3-errors.js";
import {
  type AppendRequest,
  ChecksumMismatchError,
  nothingMoreFits,
  OffsetMismatchError,
  type ResumableStore,
  type UploadTarget,
  UploadTerminatedError,
} from "./port.js";

/** S3 refuses parts under 5 MiB, except the last. */
export const MIN_PART_SIZE = 5 * 1024 * 1024;
const DEFAULT_PART_SIZE = 8 * 1024 * 1024;
const PREFIX = ".resumable/";
const STATE = "state.json";

interface Part {
  number: number;
  size: number;
  etag: string;
}

/** What is committed of one upload: its parts in S3's multipart upload, then its tail object. */
interface UploadState {
  uploadId: string | null;
  parts: Part[];
  /** The bytes after the last part (fewer than a part), in the object `tail-{generation}`. */
  tail: { generation: number; size: number } | null;
  /** The next tail's generation: a tail object is never overwritten, so a crash never mixes two. */
  nextGeneration: number;
  terminated: boolean;
  expiresAtMs: number;
}

const offsetOf = (state: UploadState) =>
  state.parts.reduce((sum, part) => sum + part.size, 0) + (state.tail?.size ?? 0);

/**
 * tus uploads on S3: the bytes go into an S3 multipart upload, a part at a time (parts of at least
 * 5 MiB; one is held in memory while it uploads); bytes short of a part are kept in a tail object
 * until the next request fills it. `state.json` is the commit point: it is written only after the
 * parts and tail it names are stored, so a crash leaves the previous state (parts uploaded after it
 * are replaced when their numbers are uploaded again, tails by generation). At the declared length
 * the upload is completed into the blob's own key.
 */
export class S3ResumableStore implements ResumableStore {
  private readonly partSize: number;

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    partSize = DEFAULT_PART_SIZE,
  ) {
    this.partSize = Math.max(partSize, MIN_PART_SIZE);
  }

  async offset(target: UploadTarget): Promise<number | "terminated"> {
    const state = await this.readState(target.key);
    if (state?.terminated) return "terminated";
    const blob = await this.storedSize(target.key);
    if (blob !== null) return blob;
    if (!state && target.length === 0) return this.complete(target, this.fresh(target), Buffer.alloc(0));
    if (state && offsetOf(state) === target.length)
      return this.complete(target, state, await this.tailOf(target.key, state));
    return state ? offsetOf(state) : 0;
  }

  async append(target: UploadTarget, request: AppendRequest): Promise<number> {
    const current = await this.offset(target);
    if (current === "terminated") throw new UploadTerminatedError();
    if (request.offset !== current) throw new OffsetMismatchError(current);
    if (current === target.length) return nothingMoreFits(request.body, target.length);
    const before = (await this.readState(target.key)) ?? this.fresh(target);
    const working: UploadState = { ...before, parts: [...before.parts] };
    const pending = new PendingBytes(await this.tailOf(target.key, before));
    const hash = request.checksum ? createHash(request.checksum.algorithm) : null;
    const limit = target.length - request.offset;
    let received = 0;
    try {
      for await (const chunk of request.body as AsyncIterable<Buffer>) {
        received += chunk.length;
        if (received > limit) throw new BlobTooLargeError(target.length);
        hash?.update(chunk);
        pending.push(chunk);
        while (pending.size >= this.partSize) {
          await this.uploadPart(target, working, pending.take(this.partSize));
          if (request.interimCommits) await this.writeState(target.key, working);
        }
      }
    } catch (error) {
      if (!hash && !(error instanceof BlobTooLargeError))
        await this.keepTail(target, before, working, pending);
      else await this.forget(target, before, working);
      throw error;
    }
    if (hash && request.checksum && !hash.digest().equals(request.checksum.digest)) {
      await this.forget(target, before, working);
      throw new ChecksumMismatchError(request.checksum.algorithm);
    }
    if (offsetOf({ ...working, tail: null }) + pending.size === target.length)
      return this.complete(target, working, pending.take(pending.size));
    await this.keepTail(target, before, working, pending);
    return offsetOf(working);
  }

  async terminate(target: UploadTarget): Promise<void> {
    const state = await this.readState(target.key);
    await this.discard(target.key, state);
    await this.writeState(target.key, { ...this.fresh(target), terminated: true });
    await this.deleteKeys([target.key]);
  }

  async purgeExpired(now: Date, busy: (key: string) => boolean): Promise<number> {
    let purged = 0;
    for (const key of await this.keys()) {
      const state = await this.readState(key);
      if (!state || state.expiresAtMs > now.getTime() || busy(key)) continue;
      await this.discard(key, state);
      purged++;
    }
    return purged;
  }

  async remove(keys: string[]): Promise<void> {
    for (const key of keys) {
      const state = await this.readState(key);
      if (state) await this.discard(key, state);
    }
  }

  private fresh(target: UploadTarget): UploadState {
    return {
      uploadId: null,
      parts: [],
      tail: null,
      nextGeneration: 1,
      terminated: false,
      expiresAtMs: target.expiresAt.getTime(),
    };
  }

  private async uploadPart(target: UploadTarget, state: UploadState, body: Buffer): Promise<void> {
    if (!state.uploadId) {
      const created = await this.client.send(
        new CreateMultipartUploadCommand({
          Bucket: this.bucket,
          Key: target.key,
          ContentType: target.contentType,
        }),
      );
      state.uploadId = created.UploadId ?? null;
      if (!state.uploadId) throw new Error("S3 answered CreateMultipartUpload without an UploadId");
      // Committed before its first part: whatever happens next (a crash mid-request), the purge
      // of this upload finds the multipart upload to abort. No part or tail changed yet.
      await this.writeState(target.key, state);
    }
    const number = state.parts.length + 1;
    const uploaded = await this.client.send(
      new UploadPartCommand({
        Bucket: this.bucket,
        Key: target.key,
        UploadId: state.uploadId,
        PartNumber: number,
        Body: body,
        ContentLength: body.length,
      }),
    );
    state.parts.push({ number, size: body.length, etag: uploaded.ETag ?? "" });
    // The old tail's bytes went into this part (they come first): it is no longer the tail.
    state.tail = null;
  }

  /** Stores the bytes short of a part as a new tail, commits, then deletes the tail it replaced. */
  private async keepTail(
    target: UploadTarget,
    before: UploadState,
    working: UploadState,
    pending: PendingBytes,
  ): Promise<void> {
    const unchanged =
      working.parts.length === before.parts.length && pending.size === (before.tail?.size ?? 0);
    if (unchanged) return;
    if (pending.size > 0) {
      const generation = working.nextGeneration;
      const size = pending.size;
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: this.tailKey(target.key, generation),
          Body: pending.take(size),
        }),
      );
      working.tail = { generation, size };
      working.nextGeneration = generation + 1;
    }
    await this.writeState(target.key, working);
    if (before.tail && before.tail.generation !== working.tail?.generation)
      await this.deleteKeys([this.tailKey(target.key, before.tail.generation)]);
  }

  /**
   * Drops what a refused request stored: nothing of it was committed but a multipart upload it
   * began, which is aborted and the state before it restored (parts it added to an older one are
   * replaced by the next request's).
   */
  private async forget(target: UploadTarget, before: UploadState, working: UploadState): Promise<void> {
    if (before.uploadId || !working.uploadId) return;
    await this.discardUpload(target.key, working.uploadId);
    await this.writeState(target.key, before);
  }

  /** Stores the whole file at its key: the last part and CompleteMultipartUpload, or one PUT when small. */
  private async complete(target: UploadTarget, state: UploadState, rest: Buffer): Promise<number> {
    if (!state.uploadId) {
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: target.key,
          Body: rest,
          ContentType: target.contentType,
        }),
      );
    } else {
      if (rest.length > 0) await this.uploadPart(target, state, rest);
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: target.key,
          UploadId: state.uploadId,
          MultipartUpload: {
            Parts: state.parts.map((part) => ({ PartNumber: part.number, ETag: part.etag })),
          },
        }),
      );
    }
    await this.deleteKeys(await this.objectsOf(target.key));
    return target.length;
  }

  /**
   * Aborts the key's multipart uploads, the state's and any S3 lists for it (one begun just before
   * a crash, before its state was written), then deletes the tail and state objects. A failure
   * leaves the state in place, so the next purge tries again.
   */
  private async discard(key: string, state: UploadState | null): Promise<void> {
    const uploadIds = new Set(await this.multipartUploadsOf(key));
    if (state?.uploadId) uploadIds.add(state.uploadId);
    for (const uploadId of uploadIds) await this.discardUpload(key, uploadId);
    await this.deleteKeys(await this.objectsOf(key));
  }

  private async discardUpload(key: string, uploadId: string): Promise<void> {
    try {
      await this.client.send(
        new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }),
      );
    } catch (error) {
      if (!isNotFound(error)) throw error; // NoSuchUpload: already completed or aborted
    }
  }

  /** The ids of the multipart uploads in progress for exactly this key. */
  private async multipartUploadsOf(key: string): Promise<string[]> {
    const ids: string[] = [];
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    do {
      const page = await this.client.send(
        new ListMultipartUploadsCommand({
          Bucket: this.bucket,
          Prefix: key,
          KeyMarker: keyMarker,
          UploadIdMarker: uploadIdMarker,
        }),
      );
      for (const upload of page.Uploads ?? [])
        if (upload.Key === key && upload.UploadId) ids.push(upload.UploadId);
      [keyMarker, uploadIdMarker] = page.IsTruncated
        ? [page.NextKeyMarker, page.NextUploadIdMarker]
        : [undefined, undefined];
    } while (keyMarker);
    return ids;
  }

  private async tailOf(key: string, state: UploadState): Promise<Buffer> {
    if (!state.tail) return Buffer.alloc(0);
    const object = await this.client.send(
      new GetObjectCommand({ Bucket: this.bucket, Key: this.tailKey(key, state.tail.generation) }),
    );
    return Buffer.from((await object.Body?.transformToByteArray()) ?? []);
  }

  private async storedSize(key: string): Promise<number | null> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return head.ContentLength ?? 0;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  private async readState(key: string): Promise<UploadState | null> {
    try {
      const object = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: `${PREFIX}${key}/${STATE}` }),
      );
      return JSON.parse((await object.Body?.transformToString()) ?? "null") as UploadState | null;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  private async writeState(key: string, state: UploadState): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: `${PREFIX}${key}/${STATE}`,
        Body: JSON.stringify(state),
        ContentType: "application/json",
      }),
    );
  }

  private tailKey(key: string, generation: number): string {
    return `${PREFIX}${key}/tail-${generation}`;
  }

  /** Every key with upload state. */
  private async keys(): Promise<string[]> {
    const suffix = `/${STATE}`;
    return (await this.list(PREFIX))
      .filter((key) => key.endsWith(suffix))
      .map((key) => key.slice(PREFIX.length, -suffix.length));
  }

  private objectsOf(key: string): Promise<string[]> {
    return this.list(`${PREFIX}${key}/`);
  }

  private async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const object of page.Contents ?? []) if (object.Key) keys.push(object.Key);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys;
  }

  private async deleteKeys(keys: string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.client.send(
      new DeleteObjectsCommand({
        Bucket: this.bucket,
        Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true },
      }),
    );
  }
}

/** Bytes received and not yet stored as a part: taken from the front, a part at a time. */
class PendingBytes {
  private chunks: Buffer[];
  size: number;

  constructor(first: Buffer) {
    this.chunks = first.length > 0 ? [first] : [];
    this.size = first.length;
  }

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
  }

  take(bytes: number): Buffer {
    const all = Buffer.concat(this.chunks, this.size);
    const taken = all.subarray(0, bytes);
    const rest = all.subarray(bytes);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.size = rest.length;
    return taken;
  }
}
