import { once } from "node:events";
import { type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { Readable } from "node:stream";

/**
 * A streamed request body as batches of bytes: each batch goes to the connection in one write
 * (writev), so a file's sealed records go out as one write per read rather than a 64 KiB write
 * and a 16-byte write per record, and are never joined (copied) to get there.
 */
export type BodyBatches = AsyncIterable<readonly Uint8Array[]>;

/** Statuses whose Response has no body (Fetch standard "null body status"). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

function responseOf(message: IncomingMessage): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(message.headers)) {
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value])
      headers.append(name, one);
  }
  const status = message.statusCode ?? 502;
  if (NULL_BODY.has(status)) {
    message.resume();
    return new Response(null, { status, headers });
  }
  return new Response(Readable.toWeb(message) as ReadableStream<Uint8Array>, { status, headers });
}

/**
 * Sends a request with a streamed body through node:http(s) and answers a web Response. Node 20's
 * fetch keeps every byte of a streamed request body in memory until the request ends
 * (nodejs/undici#4058), which would make an upload's memory grow with the file.
 */
export function streamingRequest(
  url: URL,
  init: {
    method: string;
    headers: Record<string, string>;
    body: BodyBatches;
    signal?: AbortSignal;
  },
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const request = send(
      url,
      { method: init.method, headers: init.headers, signal: init.signal },
      (message) => resolve(responseOf(message)),
    );
    request.on("error", reject);
    // An error of the body (a file that changed, a failed read) or of the connection ends both;
    // after an answer has come, a reject changes nothing.
    writeBatches(request, init.body).catch((error: unknown) => {
      request.destroy(error as Error);
      reject(error);
    });
  });
}

/**
 * Writes each batch corked (one writev), waiting for the connection to drain between batches. A
 * request that fails or closes meanwhile stops the writing (its error has rejected the request);
 * leaving the loop closes the body's source (the file).
 */
async function writeBatches(request: ClientRequest, body: BodyBatches): Promise<void> {
  const closed = once(request, "close").catch(() => {});
  for await (const batch of body) {
    if (request.destroyed) return;
    request.cork();
    for (const part of batch) request.write(part);
    request.uncork();
    if (request.writableNeedDrain) await Promise.race([once(request, "drain"), closed]);
  }
  if (!request.destroyed) request.end();
}
