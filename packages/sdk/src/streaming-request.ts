import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { pipeline, Readable } from "node:stream";

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
    body: ReadableStream<Uint8Array>;
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
    // An error of the body (a file that changed, a failed read) or of the connection ends both;
    // after an answer has come, a reject changes nothing.
    pipeline(Readable.fromWeb(init.body), request, (error) => {
      if (error) reject(error);
    });
    request.on("error", reject);
  });
}
