import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { attachment } from "../../blobs/content-disposition.js";
import type { LocalBlobUrls } from "../../blobs/local-urls.js";
import { BlobNotFoundError, BlobTooLargeError, SMALL_BLOB_BYTES } from "../../blobs/port.js";
import { mayServeFile, writeFileBytes } from "../../command-handlers/transfers/files.js";
import * as api from "../../contract/transfers.js";
import { isMediaType } from "../../contract/transfers.js";
import { fileTooLarge, HttpError } from "../errors.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

const goneForDownload = () =>
  new HttpError(410, "GONE", "this file is no longer available: its transfer was deleted, expired or purged");
const goneWhenMissing = (error: unknown): never => {
  throw error instanceof BlobNotFoundError ? goneForDownload() : error;
};
const invalidLink = () => new HttpError(403, "FORBIDDEN", "this link is invalid or has expired");

/** `bytes=a-b`, `bytes=a-` or `bytes=-n` against a blob of `size` bytes; null for no (usable) Range. */
export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | "unsatisfiable" | null {
  if (!header) return null;
  // An empty file has no byte any range could name (RFC 9110 14.1.2).
  if (size === 0) return "unsatisfiable";
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === "" && match[2] === "")) return null;
  const [, from = "", to = ""] = match;
  if (from === "") {
    const suffix = Number(to);
    if (suffix === 0) return "unsatisfiable";
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(from);
  const end = to === "" ? size - 1 : Math.min(Number(to), size - 1);
  if (start >= size || end < start) return "unsatisfiable";
  return { start, end };
}

/**
 * Decisions 3.16: where blobs live on the local filesystem, the service itself answers the signed
 * upload and download links that S3 would otherwise answer. The token is the only credential.
 */
export function fileRoutes({ service }: RouteContext, urls: LocalBlobUrls): FastifyPluginAsync {
  const { blobs, clock, transferDeps } = service;

  return async (app) => {
    // Upload bodies are file data of any type, streamed to the blob store as they come.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser("*", (_request, _payload, done) => done(null));
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.route({
      ...serve(api.uploadFile),
      handler: async (request, reply) => {
        const claims = urls.uploadClaims(request.params.token, clock.now());
        if (!claims) throw invalidLink();
        const fileId = claims.key.split("/")[2] ?? "";
        try {
          const { size } = await writeFileBytes(transferDeps, claims.key, () =>
            blobs.put(claims.key, request.raw, { maxBytes: claims.size, contentType: claims.ct }),
          );
          return { file_id: fileId, size };
        } catch (error) {
          // The body may be unread (refused before it, or cut off mid-way): not worth reading on.
          reply.header("connection", "close");
          throw error instanceof BlobTooLargeError
            ? fileTooLarge(`the body is larger than the declared ${claims.size} bytes`)
            : error;
        }
      },
    });

    routes.route({
      ...serve(api.downloadFile),
      handler: async (request, reply) => {
        const claims = urls.downloadClaims(request.params.token, clock.now());
        if (!claims) throw invalidLink();
        if (!(await mayServeFile(transferDeps, claims.key))) throw goneForDownload();
        // The purge may remove the file at any moment from here on: missing is gone, never 500.
        // Once open, the file serves to its end even if it is unlinked meanwhile.
        const blob = await blobs.open(claims.key);
        if (!blob) throw goneForDownload();
        const range = parseRange(request.headers.range, blob.size);
        if (range === "unsatisfiable") {
          await blob.close();
          reply.header("content-range", `bytes */${blob.size}`);
          throw new HttpError(416, "RANGE_NOT_SATISFIABLE", `the file has ${blob.size} bytes`);
        }
        const small = blob.size <= SMALL_BLOB_BYTES;
        const body = await (small ? blob.bytes(range ?? undefined) : blob.read(range ?? undefined)).catch(
          goneWhenMissing,
        );
        reply
          .header("accept-ranges", "bytes")
          // Types stored before they were checked (or by S3 clients) must not break the answer.
          .header("content-type", isMediaType(claims.ct) ? claims.ct : "application/octet-stream")
          .header("content-disposition", attachment(claims.fn));
        if (range) {
          reply
            .status(206)
            .header("content-range", `bytes ${range.start}-${range.end}/${blob.size}`)
            .header("content-length", range.end - range.start + 1);
        } else {
          reply.header("content-length", blob.size);
        }
        return reply.send(body);
      },
    });
  };
}
