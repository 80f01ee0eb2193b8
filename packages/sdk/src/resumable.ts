import { setTimeout as sleep } from "node:timers/promises";
import { HandoffApiError, HandoffError } from "./errors.js";
import { backoffMs, type Transport } from "./http.js";
import type { BodyBatches } from "./streaming-request.js";

import { MAX_STALLED_ATTEMPTS } from "./upload-rules.js";

export { MAX_STALLED_ATTEMPTS, RESUMABLE_FROM } from "./upload-rules.js";

const TUS = { "tus-resumable": "1.0.0" };

/** One file's tus upload: where it goes, its size on the wire, and its bytes from any offset. */
export interface ResumableUpload {
  url: string;
  size: number;
  /** The file's wire bytes from `offset` to its end; identical bytes whenever opened. */
  open(offset: number): BodyBatches;
  /** The server's offset when known (0 for an upload just declared); null asks the server first. */
  knownOffset: number | null;
}

/** Failures after which the upload may go on from the server's offset. */
function isTransient(error: unknown): boolean {
  if (error instanceof HandoffApiError)
    // 409: the server's offset is not ours (a request it finished after we lost it); 423: an old
    // request still holds the upload.
    return error.status >= 500 || error.status === 409 || error.status === 423 || error.status === 429;
  return error instanceof HandoffError && error.code === "NETWORK_ERROR";
}

/** The upload's offset on the server (tus HEAD). */
async function serverOffset(transport: Transport, url: string): Promise<number> {
  const answer = await transport.send({ method: "HEAD", url, headers: TUS, idempotent: false });
  return offsetHeader(answer, url);
}

function offsetHeader(answer: Response, url: string): number {
  const value = Number(answer.headers.get("upload-offset") ?? Number.NaN);
  if (!Number.isSafeInteger(value) || value < 0)
    throw new HandoffError("UNEXPECTED_ANSWER", `${new URL(url).origin} answered no Upload-Offset`);
  return value;
}

/** One PATCH of the rest of the file from `offset`; answers the server's new offset. */
async function patchFrom(transport: Transport, upload: ResumableUpload, offset: number): Promise<number> {
  const answer = await transport.send({
    method: "PATCH",
    url: upload.url,
    idempotent: false,
    body: () => ({
      body: upload.open(offset),
      headers: {
        ...TUS,
        "content-type": "application/offset+octet-stream",
        "upload-offset": String(offset),
        "content-length": String(upload.size - offset),
      },
    }),
  });
  const reached = offsetHeader(answer, upload.url);
  if (reached <= offset || reached > upload.size)
    throw new HandoffError("UNEXPECTED_ANSWER", `the upload's offset went from ${offset} to ${reached}`);
  return reached;
}

/**
 * Sends a file through its tus upload resource (decisions 7.1, 7.2): the rest of the file in one
 * PATCH from the server's offset; when that fails on the way (a dropped connection, a 5xx), the
 * server keeps what it acknowledged, so after a back-off the upload asks the server where it is
 * (HEAD) and goes on from there, never from zero. It gives up after MAX_STALLED_ATTEMPTS attempts
 * in a row that moved the offset nowhere, and at once on an answer that no retry changes (the
 * link expired, the transfer is closed, the file is larger than declared).
 */
export async function uploadResumable(transport: Transport, upload: ResumableUpload): Promise<void> {
  let best = -1;
  let stalled = 0;
  let known = upload.knownOffset;
  for (;;) {
    try {
      const offset = known ?? (await serverOffset(transport, upload.url));
      known = null;
      if (offset > best) {
        best = offset;
        stalled = 0;
      }
      if (offset >= upload.size) return;
      known = await patchFrom(transport, upload, offset);
      if (known >= upload.size) return;
    } catch (error) {
      if (!isTransient(error)) throw error;
      if (++stalled >= MAX_STALLED_ATTEMPTS) throw gaveUp(error, upload, best);
      await sleep(backoffMs(stalled - 1));
    }
  }
}

function gaveUp(error: unknown, upload: ResumableUpload, offset: number): HandoffError {
  const code = error instanceof HandoffError ? error.code : "NETWORK_ERROR";
  return new HandoffError(
    code,
    `${(error as Error).message}; the upload made no progress in ${MAX_STALLED_ATTEMPTS} attempts in a row ` +
      `(the server holds ${Math.max(0, offset)} of ${upload.size} bytes)`,
    { cause: error },
  );
}
