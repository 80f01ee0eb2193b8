import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { LocalBlobUrls, UploadClaims } from "../../blobs/local-urls.js";
import { BlobTooLargeError } from "../../blobs/port.js";
import {
  CHECKSUM_ALGORITHMS,
  type ChecksumAlgorithm,
  ChecksumMismatchError,
  type DeclaredChecksum,
  OffsetMismatchError,
  UploadLockedError,
  type UploadTarget,
  UploadTerminatedError,
} from "../../blobs/resumable/port.js";
import { requireTakesUploads, writeFileBytes } from "../../command-handlers/transfers/files.js";
import * as api from "../../contract/resumable.js";
import { fileTooLarge, HttpError, validationError } from "../errors.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

const TUS_VERSION = "1.0.0";
const TUS_EXTENSIONS = "expiration,checksum,termination";
const OFFSET_STREAM = "application/offset+octet-stream";

const noSuchUpload = () =>
  new HttpError(404, "NOT_FOUND", "no such upload: the link is invalid or the upload was terminated");
const expired = () => new HttpError(410, "GONE", "this upload link has expired");

/** `Upload-Offset` and the like: a non-negative decimal integer, nothing else. */
function headerInteger(value: string | string[] | undefined, name: string): number | null {
  if (value === undefined) return null;
  if (typeof value !== "string" || !/^\d{1,16}$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw validationError(`${name} must be a non-negative integer`, `headers.${name.toLowerCase()}`);
  return Number(value);
}

/** `Upload-Checksum: <algorithm> <base64 digest>` (tus checksum extension). */
function declaredChecksum(value: string | string[] | undefined): DeclaredChecksum | null {
  if (value === undefined) return null;
  const [algorithm = "", encoded = "", ...rest] = typeof value === "string" ? value.trim().split(/ +/) : [];
  if (!CHECKSUM_ALGORITHMS.includes(algorithm as ChecksumAlgorithm))
    throw validationError(
      `Upload-Checksum must name one of ${CHECKSUM_ALGORITHMS.join(", ")}`,
      "headers.upload-checksum",
    );
  const digest = Buffer.from(encoded, "base64");
  if (rest.length > 0 || encoded === "" || digest.toString("base64") !== encoded)
    throw validationError(
      "Upload-Checksum must be the algorithm, a space and the base64 digest",
      "headers.upload-checksum",
    );
  return { algorithm: algorithm as ChecksumAlgorithm, digest };
}

/**
 * Decisions 7.1: `{PUBLIC_BASE_URL}/v1/uploads/{token}` is also a tus 1.0.0 upload resource (core,
 * expiration, checksum, termination), with the local filesystem store or S3 behind it. The token
 * is the presigned upload capability; the presigned create declared the file, so there is no
 * creation step. docs/resumable.md.
 */
export function resumableRoutes({ service }: RouteContext, links: LocalBlobUrls): FastifyPluginAsync {
  const { blobs, clock, transferDeps } = service;

  /** The upload a token names, or the tus answer for one that names none (404) or expired (410). */
  function targetOf(token: string): UploadTarget {
    const claims = links.uploadClaimsEvenExpired(token);
    if (!claims) throw noSuchUpload();
    if (claims.exp <= clock.now().getTime()) throw expired();
    return targetFrom(claims);
  }

  function requireTus(request: FastifyRequest): void {
    if (request.headers["tus-resumable"] !== TUS_VERSION)
      throw new HttpError(
        412,
        "PRECONDITION_FAILED",
        `this server speaks tus ${TUS_VERSION}: send Tus-Resumable: ${TUS_VERSION}`,
      );
  }

  /** An answer that leaves the body unread closes the connection rather than read it. */
  function refuseUnread(reply: FastifyReply, error: HttpError): never {
    reply.header("connection", "close");
    throw error;
  }

  function tusError(error: unknown, reply: FastifyReply): never {
    if (error instanceof OffsetMismatchError)
      refuseUnread(
        reply.header("upload-offset", error.offset),
        new HttpError(409, "OFFSET_MISMATCH", `the upload is at offset ${error.offset}: resume from there`),
      );
    if (error instanceof ChecksumMismatchError)
      throw new HttpError(460, "CHECKSUM_MISMATCH", `${error.message}: nothing of this request was kept`);
    if (error instanceof BlobTooLargeError)
      refuseUnread(
        reply,
        fileTooLarge(`the upload would be larger than the declared ${error.maxBytes} bytes`),
      );
    if (error instanceof UploadTerminatedError) throw noSuchUpload();
    if (error instanceof UploadLockedError) {
      reply.header("retry-after", error.retryAfterSeconds);
      throw new HttpError(
        423,
        "UPLOAD_LOCKED",
        `another request is writing this upload: retry after ${error.retryAfterSeconds} s`,
      );
    }
    throw error;
  }

  return async (app) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser("*", (_request, _payload, done) => done(null));
    app.addHook("onSend", async (_request, reply) => {
      reply.header("tus-resumable", TUS_VERSION);
    });
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.route({
      ...serve(api.getUploadOptions),
      handler: async (request, reply) => {
        const target = targetOf(request.params.token);
        return reply
          .status(204)
          .header("tus-version", TUS_VERSION)
          .header("tus-extension", TUS_EXTENSIONS)
          .header("tus-max-size", target.length)
          .header("tus-checksum-algorithm", CHECKSUM_ALGORITHMS.join(","))
          .send();
      },
    });

    routes.route({
      ...serve(api.getUploadOffset),
      handler: async (request, reply) => {
        requireTus(request);
        const target = targetOf(request.params.token);
        await requireTakesUploads(transferDeps, target.key);
        const offset = await blobs.resumable.offset(target).catch((error) => tusError(error, reply));
        if (offset === "terminated") throw noSuchUpload();
        return reply
          .status(200)
          .header("upload-offset", offset)
          .header("upload-length", target.length)
          .header("upload-expires", target.expiresAt.toUTCString())
          .header("cache-control", "no-store")
          .send();
      },
    });

    routes.route({
      ...serve(api.appendUpload),
      handler: async (request, reply) => {
        requireTus(request);
        const target = targetOf(request.params.token);
        if (request.headers["content-type"]?.split(";")[0]?.trim().toLowerCase() !== OFFSET_STREAM)
          refuseUnread(
            reply,
            new HttpError(415, "UNSUPPORTED_MEDIA_TYPE", `a PATCH body is ${OFFSET_STREAM}`),
          );
        const offset = headerInteger(request.headers["upload-offset"], "Upload-Offset");
        if (offset === null) throw validationError("Upload-Offset is required", "headers.upload-offset");
        const checksum = declaredChecksum(request.headers["upload-checksum"]);
        const length = headerInteger(request.headers["content-length"], "Content-Length");
        if (length !== null && offset + length > target.length)
          refuseUnread(
            reply,
            fileTooLarge(`the upload would be larger than the declared ${target.length} bytes`),
          );
        const body = request.raw;
        const newOffset = await writeFileBytes(
          transferDeps,
          target.key,
          () =>
            blobs.resumable
              .append(target, { offset, body, checksum, interimCommits: !checksum && length !== null }, () =>
                body.destroy(),
              )
              .catch((error) => tusError(error, reply)),
          (offsetNow) => offsetNow === target.length,
        );
        return reply
          .status(204)
          .header("upload-offset", newOffset)
          .header("upload-expires", target.expiresAt.toUTCString())
          .send();
      },
    });

    routes.route({
      ...serve(api.terminateUpload),
      handler: async (request, reply) => {
        requireTus(request);
        const target = targetOf(request.params.token);
        await requireTakesUploads(transferDeps, target.key);
        await blobs.resumable.terminate(target).catch((error) => tusError(error, reply));
        return reply.status(204).send();
      },
    });
  };
}

function targetFrom(claims: UploadClaims): UploadTarget {
  return { key: claims.key, length: claims.size, contentType: claims.ct, expiresAt: new Date(claims.exp) };
}
