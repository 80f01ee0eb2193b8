import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  LogController,
} from "fastify";
import { destination, stdSerializers } from "pino";

export const REQUEST_ID_HEADER = "x-request-id";
/** A caller's own request id is kept when it is this short and plain; anything else gets a fresh one. */
const CALLER_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;
/** Route parameters and query names whose values are credentials (signed-link tokens, keys). */
const SECRET_NAME = /token|secret|key|password|signature|credential/i;
const REDACTED = "[redacted]";

/**
 * Log lines go to standard output in writes of about this many bytes, and at least every
 * LOG_FLUSH_MS. Written one at a time, each line was a trip through libuv's thread pool that cost
 * the request thread about 4 % of a small transfer's time under load (issue 21).
 */
const LOG_BATCH_BYTES = 4096;
/**
 * The longest a line waits to be written. On exit, pino writes what is left; a process killed
 * outright (SIGKILL, out of memory) loses at most this long's lines.
 */
const LOG_FLUSH_MS = 200;

/** The caller's X-Request-Id when well-formed, else a new UUID. */
export function requestIdOf(request: IncomingMessage): string {
  const header = request.headers[REQUEST_ID_HEADER];
  const supplied = Array.isArray(header) ? header[0] : header;
  return supplied && CALLER_REQUEST_ID.test(supplied) ? supplied : randomUUID();
}

/**
 * The URL as logged: path segments that hold a secret route parameter (`/v1/files/:token`) and
 * query values under a secret-looking name are replaced, so signed links never reach the log.
 */
export function loggableUrl(url: string, routePattern: string | undefined): string {
  const [path = "", query] = url.split("?", 2);
  const pattern = routePattern?.split("/") ?? [];
  const secretAt = (i: number) => pattern[i]?.startsWith(":") === true && SECRET_NAME.test(pattern[i] ?? "");
  const segments = path.split("/").map((segment, i) => (secretAt(i) ? REDACTED : segment));
  if (query === undefined) return segments.join("/");
  const params = new URLSearchParams(query);
  for (const name of new Set(params.keys())) if (SECRET_NAME.test(name)) params.set(name, REDACTED);
  return `${segments.join("/")}?${params.toString()}`;
}

/** `fields` with the value of every secret-looking name censored, one level deep. */
function censored<T extends Record<string, unknown>>(fields: T): T {
  const copy: Record<string, unknown> = { ...fields };
  for (const name of Object.keys(copy)) if (SECRET_NAME.test(name)) copy[name] = REDACTED;
  return copy as T;
}

/**
 * Fastify's logger settings: pino JSON lines, each with the request id under `request_id`.
 * Credentials never reach a line: a request is logged as its method, its URL with signed-link
 * tokens censored (loggableUrl), host and address, never its headers; an error's own fields under
 * a secret-looking name are censored. Serializers rather than pino's `redact` paths: those walk and
 * copy every line's object, the request lines included, for fields that only an error could carry
 * (issue 21: about a fourteenth of what the request thread allocated). Fastify's own two lines per
 * request (start and end) are one, when it ends (OneLinePerRequest).
 */
export function requestLogOptions(
  enabled: boolean,
): Pick<FastifyServerOptions, "logger" | "genReqId" | "requestIdHeader" | "logController"> {
  return {
    logger: enabled
      ? {
          level: "info",
          serializers: {
            req: (request: FastifyRequest) => ({
              method: request.method,
              url: loggableUrl(request.url, request.routeOptions?.url),
              host: request.host,
              remoteAddress: request.ip,
            }),
            err: (error: Error) => censored(stdSerializers.err(error)),
          },
          stream: destination({
            dest: 1,
            sync: false,
            minLength: LOG_BATCH_BYTES,
            periodicFlush: LOG_FLUSH_MS,
          }),
        }
      : false,
    genReqId: requestIdOf,
    // genReqId reads the header itself, so that a malformed or oversized one is not trusted.
    requestIdHeader: false,
    logController: new OneLinePerRequest({ requestIdLogLabel: "request_id" }),
  };
}

/**
 * One line per request, when it ends: what was asked (`req`), the answer's status (`res`) and how
 * long it took (`responseTime`, ms). Fastify's own "incoming request" line is left out: on the
 * thread that answers every request, a second line per request cost more than the small
 * transfers' own work in places (issue 21). Errors keep fastify's lines, and an event stream
 * logs its opening too (src/http/event-stream.ts): it may stay open for hours.
 */
class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    const line = { req: request, res: reply, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...line, err: error }, "request errored");
    else reply.log.info(line, "request completed");
  }
}

/** Echoes the request id on every answer, errors included, so a caller can quote it. */
export function echoRequestId(app: FastifyInstance): void {
  app.addHook("onSend", (request, reply, payload, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    done(null, payload);
  });
}
