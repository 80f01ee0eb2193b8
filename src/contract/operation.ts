import type { z } from "zod";

/**
 * One HTTP operation of the public API, as the contract declares it: the server validates and
 * serializes with its schemas (src/http/serve.ts), the OpenAPI document is written from it
 * (./openapi.ts), and the SDK's types are generated from that document.
 */
export type Method = "GET" | "HEAD" | "OPTIONS" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * What a request must carry (decisions 4.3): `apiKey` takes an account's API key or a person's
 * session, `session` a session only, `connectionToken` an agent's one-time token, `admin` the
 * operator's token, `none` nothing (public routes and signed links).
 */
export type Security = "apiKey" | "session" | "connectionToken" | "admin" | "none";

/** The request headers the service reads, beyond Authorization and Content-Type. */
export type RequestHeader =
  | "X-Service-Agent"
  | "Range"
  | "Tus-Resumable"
  | "Upload-Offset"
  | "Upload-Checksum";

/** The response headers the service sends that a client may act on. */
export type ResponseHeader =
  | "X-RateLimit-Limit"
  | "X-RateLimit-Remaining"
  | "X-RateLimit-Reset"
  | "Retry-After"
  | "Idempotent-Replayed"
  | "Accept-Ranges"
  | "Content-Range"
  | "Content-Disposition"
  | "Cache-Control"
  | "Tus-Resumable"
  | "Tus-Version"
  | "Tus-Extension"
  | "Tus-Max-Size"
  | "Tus-Checksum-Algorithm"
  | "Upload-Offset"
  | "Upload-Length"
  | "Upload-Expires";

/** A body that is not JSON: text (e.g. CSV) or bytes (a file). */
export type RawContent = "text" | "binary";

/** A documented answer whose JSON body is `json` (if any); `raw` lists other media types it may have. */
export interface Reply<Json extends z.ZodType | undefined = z.ZodType | undefined> {
  description: string;
  json?: Json;
  raw?: Record<string, RawContent>;
  headers?: readonly ResponseHeader[];
}

/** A status's answer: a JSON body schema (the common case) or a full reply. */
export type Answer = z.ZodType | Reply;

/**
 * A body the route reads itself, streamed: a multipart form with file parts, or raw bytes
 * (`application/octet-stream` unless `mediaType` names another).
 */
export type StreamedBody =
  | { kind: "multipart"; fields: z.ZodObject; fileField: string; description: string }
  | { kind: "binary"; mediaType?: string; description: string };

export interface OperationSpec {
  /** Unique, camelCase: the method name generated clients get. */
  operationId: string;
  method: Method;
  /** In fastify's syntax: `/v1/transfers/:id`. */
  path: string;
  security: Security;
  tag: string;
  summary: string;
  description?: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** A JSON body, validated before the handler runs. */
  body?: z.ZodType;
  /** A body the handler reads itself; documented, not validated by the framework. */
  streamedBody?: StreamedBody;
  requestHeaders?: readonly RequestHeader[];
  /**
   * Success answers, by status; also an error status whose answer says more than the error body
   * (a `reply` with `json: ErrorBody` and headers), which is then left out of `errors`.
   */
  responses: Record<number, Answer>;
  /**
   * The error statuses this operation decides itself. Those every operation of its kind answers
   * (401 and 429 with credentials, 400 with input, 415 and 413 with a JSON body, 409 with
   * Idempotency-Key, 412 with tus, 503 with storage, 507 with file bytes) are added by the rules
   * in ./standard-answers.ts.
   */
  errors?: readonly number[];
  /** false: Idempotency-Key is ignored (its body or answer is a secret). POSTs honour it otherwise. */
  idempotency?: false;
  /**
   * "tus": a tus 1.0.0 upload resource (decisions 7.1). Every answer carries Tus-Resumable, every
   * request but OPTIONS must send `Tus-Resumable: 1.0.0` (412 otherwise), and the route reads the
   * body itself (the JSON parsers' 413/415 do not apply).
   */
  protocol?: "tus";
  /**
   * false: answered without the database, the event store or blob storage (liveness, a tus
   * OPTIONS), so never 503 SERVICE_UNAVAILABLE.
   */
  needsStorage?: false;
}

/** Declares an operation, keeping its schemas' types for the route's handler. */
export function operation<const Spec extends OperationSpec>(spec: Spec): Spec {
  return spec;
}

/** A reply with a description, headers or other media types besides a JSON body. */
export function reply<const R extends Reply>(answer: R): R {
  return answer;
}

/** Whether a POST of this operation honours Idempotency-Key (decisions 3.17). */
export const honoursIdempotencyKey = (spec: OperationSpec): boolean =>
  spec.method === "POST" && spec.idempotency !== false;

/** Whether requests of this operation are counted against the credential's rate limit (decisions 3.15). */
export const rateLimited = (spec: OperationSpec): boolean =>
  spec.security === "apiKey" || spec.security === "session";

/** Whether the request's body goes through the JSON parsers (and their 413/415). */
export const parsesJsonBody = (spec: OperationSpec): boolean =>
  spec.body !== undefined || (spec.protocol !== "tus" && !["GET", "HEAD", "OPTIONS"].includes(spec.method));

export const isReply = (answer: Answer): answer is Reply => "description" in answer && !("_zod" in answer);
