import fastifyMultipart from "@fastify/multipart";
import type { FastifyInstance } from "fastify";
import { MAX_FILES_PER_TRANSFER } from "../../domain/file-names.js";
import { STREAM_CHUNK } from "../blobs/filesystem.js";
import { HttpError, validationError } from "./errors.js";

/**
 * Multipart parsing for the one route that takes it (POST /v1/transfers); elsewhere such a body is
 * 415, like any non-JSON one. Sizes are enforced while streaming, against the plan (413
 * FILE_TOO_LARGE), not by the parser; file names keep their paths: a folder's relative names
 * arrive whole (decisions 7.3), and a bad one is refused, never silently cut.
 */
export async function acceptMultipart(scope: FastifyInstance): Promise<void> {
  await scope.register(fastifyMultipart, {
    preservePath: true,
    fileHwm: STREAM_CHUNK,
    highWaterMark: STREAM_CHUNK,
    limits: {
      fileSize: Number.MAX_SAFE_INTEGER,
      files: MAX_FILES_PER_TRANSFER,
      // The transfer's own fields, and an encryption_iv per file.
      fields: 50 + MAX_FILES_PER_TRANSFER,
      fieldSize: 64 * 1024,
      parts: 50 + 2 * MAX_FILES_PER_TRANSFER,
    },
  });
}

/**
 * What the parser (busboy, and its Dicer) says of a body that is malformed or ends before its
 * closing boundary. The same break reaches the handler two ways: thrown by the parts iterator
 * ("Unexpected end of multipart data"), or emitted on the file stream a blob store is reading,
 * whole (a small file) or piped (a large one) ("Part terminated early due to unexpected end of
 * multipart data"); which one comes first depends on how the bytes were split on the wire.
 */
const PARSER_MESSAGE = /[Uu]nexpected end of (form|multipart data)|^Malformed|^Multipart: /;

/**
 * Errors of the multipart parser are the client's: a malformed, cut or over-limit body. The one
 * translation for every path a form's bytes take (fields, small and large files, server-side
 * encryption); any other error goes on as it is.
 */
export function multipartClientError(error: unknown): unknown {
  const e = error as { code?: string; statusCode?: number; message?: string };
  if (e.code === "FST_FILES_LIMIT")
    return validationError(`a transfer holds at most ${MAX_FILES_PER_TRANSFER} files`, "files");
  if (e.code === "FST_REQ_FILE_TOO_LARGE" || e.statusCode === 413) {
    return new HttpError(413, "PAYLOAD_TOO_LARGE", e.message ?? "the form is too large");
  }
  const parser = (e.code ?? "").startsWith("FST_") || PARSER_MESSAGE.test(e.message ?? "");
  return parser ? validationError(`the multipart body is invalid: ${e.message}`, "body") : error;
}
