import type { IncomingMessage } from "node:http";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import { DomainError, type DomainErrorCode } from "../../domain/decider.js";
import type { ErrorBody } from "../contract/common.js";
import { WrongExpectedVersionError } from "../eventstore/port.js";
import { AmbiguousRecipientError } from "../queries/recipients.js";
import { type DependencyFailure, dependencyFailure, RETRY_AFTER_SECONDS } from "./dependency-failure.js";
import { maskEmail } from "./presenters.js";

export interface ErrorDetail {
  path: string;
  message: string;
}

/** An error meant for the client: its code, status and message reach the body as they are. */
export interface Candidate {
  account_id: string;
  account_name: string;
  email_masked: string;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: ErrorDetail[],
    readonly candidates?: Candidate[],
  ) {
    super(message);
    this.name = "HttpError";
  }
}

/** A VALIDATION_ERROR always names what was wrong: `details` defaults to one entry for `path`. */
export const validationError = (message: string, details: ErrorDetail[] | string = "body") =>
  new HttpError(
    400,
    "VALIDATION_ERROR",
    message,
    typeof details === "string" ? [{ path: details, message }] : details,
  );
export const fileTooLarge = (message: string) => new HttpError(413, "FILE_TOO_LARGE", message);
export const notFound = (what = "resource") => new HttpError(404, "NOT_FOUND", `${what} not found`);
export const unauthorized = (message = "missing or invalid credentials") =>
  new HttpError(401, "UNAUTHORIZED", message);

/** How each domain refusal reaches the client: its status, and the public code where it differs. */
const DOMAIN_ERRORS: Record<DomainErrorCode, { status: number; code?: string }> = {
  ACCOUNT_EXISTS: { status: 409 },
  AGENT_DISCONNECTED: { status: 409 },
  AGENT_ID_TAKEN: { status: 409 },
  ALREADY_CONNECTED: { status: 409 },
  CONFLICT: { status: 409 },
  EMAIL_NOT_VERIFIED: { status: 403 },
  FILES_MISSING: { status: 400, code: "VALIDATION_ERROR" },
  FILE_TOO_LARGE: { status: 413 },
  FORBIDDEN: { status: 403 },
  GONE: { status: 410 },
  RECEIPT_INVALID: { status: 400 },
  INVALID: { status: 400, code: "VALIDATION_ERROR" },
  INVALID_TOKEN: { status: 400 },
  INVITE_PENDING: { status: 409 },
  INVITE_RATE_LIMIT: { status: 429 },
  KEY_LIMIT_REACHED: { status: 403 },
  NOT_FOUND: { status: 404 },
  QUOTA_EXCEEDED: { status: 403 },
  // Decisions 10.2: a used, expired or revoked request link.
  REQUEST_CLOSED: { status: 410 },
  SELF_CONNECTION: { status: 400 },
  // Spec section 7: a full storage answers like a file that is too large (domain/storage-quota.ts).
  STORAGE_FULL: { status: 413, code: "FILE_TOO_LARGE" },
  TRANSFER_PENDING: { status: 409 },
  UNAUTHORIZED: { status: 401 },
};

/** Framework errors that are the client's doing, by fastify error code; `path` names the culprit. */
const FRAMEWORK_ERRORS: Record<string, { status: number; code: string; message?: string; path?: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: "UNSUPPORTED_MEDIA_TYPE" },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: "VALIDATION_ERROR" },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: "VALIDATION_ERROR" },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: "PAYLOAD_TOO_LARGE" },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: "VALIDATION_ERROR" },
  // The router's: the URL itself is bad. Their messages repeat the whole URL, so ours are short.
  FST_ERR_BAD_URL: {
    status: 400,
    code: "VALIDATION_ERROR",
    message: "the URL is not validly percent-encoded",
    path: "url",
  },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, code: "URI_TOO_LONG", message: "a path segment is too long" },
};

/** The code of a status that the HTTP layer itself answers (Node's parser, the router, a timeout). */
const PROTOCOL_CODES: Record<number, string> = {
  400: "BAD_REQUEST",
  408: "REQUEST_TIMEOUT",
  413: "PAYLOAD_TOO_LARGE",
  414: "URI_TOO_LONG",
  417: "EXPECTATION_FAILED",
  431: "HEADERS_TOO_LARGE",
};

function body(
  status: number,
  code: string,
  message: string,
  details?: ErrorDetail[],
  candidates?: Candidate[],
): ErrorBody {
  return {
    error: { code, message, status, ...(details ? { details } : {}), ...(candidates ? { candidates } : {}) },
  };
}

/** The body of an answer the HTTP layer gives on its own (Node's parser, a timeout), by status. */
export const protocolErrorBody = (status: number, message: string): ErrorBody =>
  body(status, PROTOCOL_CODES[status] ?? "BAD_REQUEST", message);

function toBody(error: unknown): ErrorBody {
  if (error instanceof HttpError) {
    return body(error.status, error.code, error.message, error.details, error.candidates);
  }
  if (error instanceof AmbiguousRecipientError) {
    const candidates = error.candidates.map((agent) => ({
      account_id: agent.account_id,
      account_name: agent.account_name,
      email_masked: maskEmail(agent.account_email),
    }));
    return body(400, "AMBIGUOUS_RECIPIENT", error.message, undefined, candidates);
  }
  if (error instanceof DomainError) {
    const { status, code = error.code } = DOMAIN_ERRORS[error.code];
    const details =
      code === "VALIDATION_ERROR" ? [{ path: error.field ?? "files", message: error.message }] : undefined;
    return body(status, code, error.message, details);
  }
  if (error instanceof WrongExpectedVersionError) {
    return body(409, "CONFLICT", "too many concurrent changes to the same resource; retry");
  }
  const failure = dependencyFailure(error);
  if (failure) return failureBody(failure);
  if (hasZodFastifySchemaValidationErrors(error)) {
    const context = (error as FastifyError).validationContext;
    const details = error.validation.map((issue) => {
      const segments = issue.instancePath.split("/").filter(Boolean);
      const path = [...(context && context !== "body" ? [context] : []), ...segments].join(".");
      return { path, message: issue.message ?? "is invalid" };
    });
    const first = details[0];
    const summary = first ? `${first.path || "request"}: ${first.message}` : "the request is invalid";
    return body(400, "VALIDATION_ERROR", summary, details);
  }
  const fastifyError = error as Partial<FastifyError>;
  const known = fastifyError.code ? FRAMEWORK_ERRORS[fastifyError.code] : undefined;
  const isBadJson = error instanceof SyntaxError && fastifyError.statusCode === 400;
  if (known || isBadJson) {
    const { status, code, path = "body" } = known ?? { status: 400, code: "VALIDATION_ERROR" };
    const message = isBadJson
      ? "the body is not valid JSON"
      : (known?.message ?? fastifyError.message ?? "bad request");
    return body(status, code, message, code === "VALIDATION_ERROR" ? [{ path, message }] : undefined);
  }
  // Any other client error the framework raises keeps its 4xx status, in our shape.
  const status = fastifyError.statusCode ?? 500;
  if (fastifyError.code?.startsWith("FST_") && status >= 400 && status < 500) {
    return protocolErrorBody(status, fastifyError.message ?? "bad request");
  }
  return body(500, "INTERNAL_ERROR", "an unexpected error occurred");
}

/** A dependency away answers 503 (try again soon), a full disk 507: never a 500, never a half-stored write. */
function failureBody(failure: DependencyFailure): ErrorBody {
  if (failure.kind === "full")
    return body(
      507,
      "INSUFFICIENT_STORAGE",
      "the server's storage is full; nothing of this request was stored",
    );
  return body(503, "SERVICE_UNAVAILABLE", `${failure.dependency} is unavailable; retry in a few seconds`);
}

/**
 * How long the rest of a refused request's body is read (and dropped) before the answer goes: a
 * client still sending an upload gets the answer rather than a broken pipe. Past this, the answer
 * goes anyway and the connection may be cut.
 */
const DRAIN_MS = 15_000;

/** Resolves once the request's body has all arrived (or after `ms`), reading and dropping it. */
function drained(raw: IncomingMessage, ms: number): Promise<void> {
  if (raw.complete || raw.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(done, ms);
    raw.once("end", done);
    raw.once("close", done);
    raw.unpipe();
    raw.resume();
  });
}

/** Every failure, ours or the framework's, leaves as the one error body; never a stack trace or SQL. */
export async function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply) {
  const errorBody = toBody(error);
  const { status } = errorBody.error;
  if (status === 503) reply.header("retry-after", String(RETRY_AFTER_SECONDS));
  // A dependency away (503, 507) is an operator's warning; any other 5xx is a bug to look at.
  if (status === 503 || status === 507) {
    request.log.warn({ err: error }, "dependency failed");
    await drained(request.raw, DRAIN_MS);
  } else if (status >= 500) request.log.error({ err: error }, "request failed");
  return reply.status(status).type("application/json").send(errorBody);
}

export function sendNotFound(request: FastifyRequest, reply: FastifyReply) {
  return reply
    .status(404)
    .type("application/json")
    .send(body(404, "NOT_FOUND", `no route for ${request.method} ${request.url.split("?")[0]}`));
}
