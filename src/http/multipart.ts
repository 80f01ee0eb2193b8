import fastifyMultipart from "@fastify/multipart";
import type { FastifyInstance } from "fastify";
import { MAX_FILES_PER_TRANSFER } from "../../domain/file-names.js";
import { STREAM_CHUNK } from "../blobs/filesystem.js";

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
