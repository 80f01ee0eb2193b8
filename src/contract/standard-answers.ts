import type { z } from "zod";
import { ErrorBody } from "./common.js";
import {
  type Answer,
  honoursIdempotencyKey,
  isReply,
  type OperationSpec,
  parsesJsonBody,
  type RawContent,
  type ResponseHeader,
  rateLimited,
} from "./operation.js";

/** An answer as documented: always a description, a JSON body where there is one. */
export interface DocumentedAnswer {
  description: string;
  json?: z.ZodType;
  raw?: Record<string, RawContent>;
  headers: ResponseHeader[];
}

/** Decisions 3.1: what each error status means, in the one error body. */
const ERROR_MEANINGS: Record<number, string> = {
  400: "The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code",
  401: "UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired",
  403: "FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED)",
  404: "NOT_FOUND: no such resource visible to the caller",
  409: "A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request)",
  410: "GONE: the resource existed but no longer takes this request",
  412: "PRECONDITION_FAILED: the request does not send `Tus-Resumable: 1.0.0`",
  413: "FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached",
  415: "UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes",
  416: "RANGE_NOT_SATISFIABLE: the Range names no byte of the file (Content-Range gives its size)",
  423: "UPLOAD_LOCKED: another request is writing this upload; retry shortly",
  429: "RATE_LIMITED: too many requests; retry after the seconds of Retry-After",
  460: "CHECKSUM_MISMATCH: the bytes do not match Upload-Checksum; nothing of this request was kept",
  503: "SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After",
  507: "INSUFFICIENT_STORAGE: the server's storage is full; nothing of this request was stored",
};

const RATE_LIMIT_HEADERS: ResponseHeader[] = [
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
];

/** The error statuses every operation of this kind can answer, whatever its handler decides. */
function standardErrors(spec: OperationSpec): number[] {
  const statuses: number[] = [];
  if (spec.security !== "none") statuses.push(401);
  if (rateLimited(spec)) statuses.push(429);
  if (spec.params || spec.query || spec.body) statuses.push(400);
  // The JSON guard answers 413/415 for any body sent to a method that may carry one, declared or not.
  if (parsesJsonBody(spec)) statuses.push(413, 415);
  if (honoursIdempotencyKey(spec)) statuses.push(400, 409);
  if (spec.protocol === "tus" && spec.method !== "OPTIONS") statuses.push(412);
  // src/http/dependency-failure.ts: a dependency away is 503, a full disk under file bytes 507.
  if (spec.needsStorage !== false) statuses.push(503);
  if (spec.streamedBody) statuses.push(507);
  return statuses;
}

function successAnswer(answer: Answer): Omit<DocumentedAnswer, "headers"> & { headers: ResponseHeader[] } {
  if (!isReply(answer)) return { description: "Success", json: answer, headers: [] };
  return {
    description: answer.description,
    ...(answer.json ? { json: answer.json } : {}),
    ...(answer.raw ? { raw: answer.raw } : {}),
    headers: [...(answer.headers ?? [])],
  };
}

/** Headers that go on an answer of `status` because of what kind of operation it is. */
function standardHeaders(spec: OperationSpec, status: number): ResponseHeader[] {
  const headers: ResponseHeader[] = [];
  // Counted requests carry the counter; a 401 is refused before counting.
  if (rateLimited(spec) && status !== 401) headers.push(...RATE_LIMIT_HEADERS);
  if (status === 429 || status === 503) headers.push("Retry-After");
  if (status === 416) headers.push("Content-Range");
  if (spec.protocol === "tus") headers.push("Tus-Resumable");
  // A stored answer (any status below 500) is sent again with this header.
  if (honoursIdempotencyKey(spec) && status !== 401 && status !== 429) headers.push("Idempotent-Replayed");
  return headers;
}

/** Every answer the operation gives, by status: its own and those of the rules above. */
export function answersOf(spec: OperationSpec): Map<number, DocumentedAnswer> {
  const answers = new Map<number, DocumentedAnswer>();
  for (const [status, answer] of Object.entries(spec.responses)) {
    answers.set(Number(status), successAnswer(answer));
  }
  const errors = new Set([...(spec.errors ?? []), ...standardErrors(spec)]);
  for (const status of [...errors].sort((a, b) => a - b)) {
    // An error the operation declares itself (with its own meaning or headers) stays as declared.
    if (answers.has(status)) continue;
    const meaning = ERROR_MEANINGS[status];
    if (!meaning) throw new Error(`${spec.operationId}: no meaning for error status ${status}`);
    answers.set(status, { description: meaning, json: ErrorBody, headers: [] });
  }
  for (const [status, answer] of answers) {
    const headers = new Set([...answer.headers, ...standardHeaders(spec, status)]);
    answer.headers = [...headers];
  }
  return new Map([...answers].sort(([a], [b]) => a - b));
}
