import { fromBase64 } from "@handoff/sdk/crypto";
import { MAX_STALLED_ATTEMPTS } from "@handoff/sdk/upload-rules";
import { ApiError, errorOf } from "./api.js";
import type { UnfinishedFile } from "./unfinished-uploads.js";
import { wireChunks } from "./wire-chunks.js";

const TUS = { "tus-resumable": "1.0.0" };

/** A file of a presigned transfer, its upload resource and K, which seals it. */
export interface TusFile {
  file: File;
  upload: UnfinishedFile;
  contentKey: Uint8Array;
}

/**
 * Sends one file through its tus resource (decisions 7.1, 7.2) from the server's offset (HEAD),
 * PATCH after PATCH. After a failure on the way (a dropped connection, a 5xx, an offset the server
 * disagrees with) it asks the server again and goes on from there, giving up after
 * MAX_STALLED_ATTEMPTS attempts in a row that moved nothing. `onBytes` hears the wire bytes the
 * server holds or is receiving.
 */
export async function uploadThroughTus(target: TusFile, onBytes: (bytes: number) => void): Promise<void> {
  const { upload } = target;
  let best = -1;
  let stalled = 0;
  for (;;) {
    try {
      let offset = await serverOffset(upload.resumable_url);
      if (offset > best) {
        best = offset;
        stalled = 0;
      }
      onBytes(offset);
      if (offset >= upload.wire_size) return;
      const salt = fromBase64(upload.encryption_iv);
      for await (const chunk of sealedAhead(wireChunks(target.file, target.contentKey, salt, offset))) {
        offset = await patch(upload.resumable_url, offset, chunk, (sent) => onBytes(offset + sent));
        onBytes(offset);
      }
      if (offset >= upload.wire_size) return;
      throw new Error(`${upload.name} is shorter than when the send began: choose the file as it was`);
    } catch (error) {
      if (!transient(error)) throw error;
      if (++stalled >= MAX_STALLED_ATTEMPTS)
        throw new Error(
          `${upload.name}: the upload made no progress in ${MAX_STALLED_ATTEMPTS} attempts in a row (${(error as Error).message})`,
        );
      await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** (stalled - 1)));
    }
  }
}

/**
 * The chunks of `chunks`, the next one sealed while the current one is sent: sealing and sending
 * overlap instead of taking turns, at the cost of one more chunk held. When the consumer stops
 * early (a PATCH failed), the one sealed ahead is dropped and the generator closed.
 */
async function* sealedAhead(chunks: AsyncGenerator<Blob>): AsyncGenerator<Blob> {
  let next = chunks.next();
  try {
    for (;;) {
      const { done, value } = await next;
      if (done) return;
      next = chunks.next();
      yield value;
    }
  } finally {
    // Whatever the read ahead answers is not wanted any more; its error is not either.
    void next.then(() => chunks.return(undefined)).catch(() => {});
  }
}

/** Answers the API's errors after which the upload may go on from the server's offset. */
function transient(error: unknown): boolean {
  if (!(error instanceof ApiError)) return false;
  return error.status === 0 || error.status >= 500 || [409, 423, 429].includes(error.status);
}

async function serverOffset(url: string): Promise<number> {
  let answer: Response;
  try {
    answer = await fetch(url, { method: "HEAD", headers: TUS, cache: "no-store" });
  } catch {
    throw new ApiError(0, "NETWORK", "the server could not be reached");
  }
  // A HEAD answer has no body: name the status in words.
  if (!answer.ok) throw new ApiError(answer.status, "HTTP_ERROR", uploadRefusal(answer.status));
  return offsetOf(answer.headers.get("upload-offset"));
}

function uploadRefusal(status: number): string {
  if (status === 404 || status === 410)
    return "the server no longer holds this upload: its link expired or the transfer was deleted";
  return `the server answered ${status} about this upload`;
}

function offsetOf(header: string | null): number {
  const offset = Number(header ?? Number.NaN);
  if (!Number.isSafeInteger(offset) || offset < 0) throw new Error("the server answered no Upload-Offset");
  return offset;
}

/** One PATCH (XMLHttpRequest, for upload progress); answers the server's new offset. */
function patch(url: string, offset: number, body: Blob, onSent: (bytes: number) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("PATCH", url);
    xhr.setRequestHeader("tus-resumable", TUS["tus-resumable"]);
    xhr.setRequestHeader("content-type", "application/offset+octet-stream");
    xhr.setRequestHeader("upload-offset", String(offset));
    xhr.upload.onprogress = (event) => onSent(event.loaded);
    xhr.onerror = () => reject(new ApiError(0, "NETWORK", "the server could not be reached"));
    xhr.onload = async () => {
      if (xhr.status === 204) {
        try {
          resolve(offsetOf(xhr.getResponseHeader("upload-offset")));
        } catch (error) {
          reject(error);
        }
        return;
      }
      reject(await errorOf(new Response(xhr.responseText, { status: xhr.status })));
    };
    xhr.send(body);
  });
}
