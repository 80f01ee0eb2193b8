import { ErrorBody } from "./common.js";
import { operation, reply } from "./operation.js";
import { TokenParams } from "./transfers.js";

/**
 * Decisions 7.1: a presigned file's `resumable_url` is a tus 1.0.0 upload resource (core protocol,
 * expiration, checksum with sha1 and sha256, termination). There is no creation step: the
 * presigned create declared the file and its size. The token is the capability, so no
 * Authorization; Tus-Resumable goes both ways (see `protocol: "tus"`).
 */
const TUS = { path: "/v1/uploads/:token", security: "none", tag: "uploads", protocol: "tus" } as const;

export const getUploadOptions = operation({
  ...TUS,
  operationId: "getUploadOptions",
  method: "OPTIONS",
  summary: "tus: what this upload resource supports",
  needsStorage: false,
  params: TokenParams,
  responses: {
    204: reply({
      description: "The tus version, extensions, checksum algorithms and the most bytes it takes",
      headers: ["Tus-Version", "Tus-Extension", "Tus-Max-Size", "Tus-Checksum-Algorithm"],
    }),
  },
  errors: [404, 410],
});

export const getUploadOffset = operation({
  ...TUS,
  operationId: "getUploadOffset",
  method: "HEAD",
  summary: "tus: how many bytes are stored (the offset to resume from), the length and the expiry",
  requestHeaders: ["Tus-Resumable"],
  params: TokenParams,
  responses: {
    200: reply({
      description: "The upload's offset, declared length and expiry; never cached",
      headers: ["Upload-Offset", "Upload-Length", "Upload-Expires", "Cache-Control"],
    }),
  },
  errors: [404, 410, 423],
});

export const appendUpload = operation({
  ...TUS,
  operationId: "appendUpload",
  method: "PATCH",
  summary: "tus: append bytes at Upload-Offset",
  description:
    "Bytes acknowledged by the 204 survive a crash or restart of the service. Refused: another content type (415), past the declared size (413).",
  requestHeaders: ["Tus-Resumable", "Upload-Offset", "Upload-Checksum"],
  params: TokenParams,
  streamedBody: {
    kind: "binary",
    mediaType: "application/offset+octet-stream",
    description: "The upload's next bytes, from Upload-Offset",
  },
  responses: {
    204: reply({
      description: "Appended: Upload-Offset is the new offset",
      headers: ["Upload-Offset", "Upload-Expires"],
    }),
    409: reply({
      description:
        "OFFSET_MISMATCH: Upload-Offset is not the upload's offset; resume from the one this answer gives",
      json: ErrorBody,
      headers: ["Upload-Offset"],
    }),
  },
  errors: [404, 410, 413, 415, 423, 460],
});

export const terminateUpload = operation({
  ...TUS,
  operationId: "terminateUpload",
  method: "DELETE",
  summary: "tus termination: remove the upload (until confirm); confirm then names the file as missing",
  requestHeaders: ["Tus-Resumable"],
  params: TokenParams,
  responses: { 204: reply({ description: "Terminated: later requests on it answer 404" }) },
  errors: [404, 410, 423],
});

export const resumableOperations = [getUploadOptions, getUploadOffset, appendUpload, terminateUpload];
