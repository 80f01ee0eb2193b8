import fastifyMultipart from "@fastify/multipart";
import type { FastifyInstance } from "fastify";
import { STREAM_CHUNK } from "../blobs/filesystem.js";
import { HttpError, validationError } from "./errors.js";

/**
 * Multipart parsing for the one route that takes it (POST /v1/transfers); elsewhere such a body is
 * 415, like any non-JSON one. Sizes are enforced while streaming, against the plan (413
 * FILE_TOO_LARGE), not by the parser; file names keep their paths so that a path is refused,
 * never silently cut.
 */
export async function acceptMultipart(scope: FastifyInstance): Promise<void> {
  await scope.register(fastifyMultipart, {
    preservePath: true,
    fileHwm: STREAM_CHUNK,
    highWaterMark: STREAM_CHUNK,
    limits: {
      fileSize: Number.MAX_SAFE_INTEGER,
      files: 100,
      fields: 50,
      fieldSize: 64 * 1024,
      parts: 200,
    },
  });
}

/**
 * Errors of the multipart parser are the client's: a malformed or over-limit body. Any other error
 * goes on as it is.
 */
export function multipartClientError(error: unknown): unknown {
  const e = error as { code?: string; statusCode?: number; message?: string };
  if (e.code === "FST_REQ_FILE_TOO_LARGE" || e.statusCode === 413) {
    return new HttpError(413, "PAYLOAD_TOO_LARGE", e.message ?? "the form is too large");
  }
  const parser =
    (e.code ?? "").startsWith("FST_") ||
    /^(Unexpected end of (form|multipart data)|Malformed|Multipart: )/.test(e.message ?? "");
  return parser ? validationError(`the multipart body is invalid: ${e.message}`, "body") : error;
}
