import { type ServerResponse, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import { HttpError, protocolErrorBody } from "./errors.js";

/** What Node's HTTP parser refused, as a status and a message for the client. */
function answerFor(code: string | undefined): { status: number; message: string } {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return { status: 431, message: "the request headers are too large" };
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { status: 408, message: "the request did not arrive in time" };
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
    case "HPE_INVALID_CONTENT_LENGTH":
      return { status: 400, message: "Content-Length is invalid or conflicts with another length header" };
    case "HPE_INVALID_TRANSFER_ENCODING":
    case "HPE_INVALID_CHUNK_SIZE":
      return { status: 400, message: "the chunked body is malformed" };
    case "HPE_INVALID_EOF_STATE":
      return { status: 400, message: "the connection ended before the request was complete" };
    default:
      return { status: 400, message: "the request is not valid HTTP/1.1" };
  }
}

/**
 * Node's `clientError`: the request never reached the router (malformed, headers too large, too
 * slow). The client still gets a proper HTTP answer with the one error body (decisions 3.1), unless
 * a response has already begun on the connection, and the connection is closed.
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const { status, message } = answerFor(error.code);
    const body = JSON.stringify(protocolErrorBody(status, message));
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroySoon();
}

function answer(response: ServerResponse, status: number, message: string): void {
  const body = JSON.stringify(protocolErrorBody(status, message));
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
  response.end(body);
}

/**
 * The answers Node would otherwise give on its own with an empty body: an `Expect` other than
 * 100-continue (417), and an HTTP/1.1 request without Host (400; Node's own check is turned off
 * in limits.ts so that this one answers instead).
 */
export function registerProtocolAnswers(app: FastifyInstance): void {
  app.server.on("checkExpectation", (_request, response: ServerResponse) =>
    answer(response, 417, "only Expect: 100-continue is supported"),
  );
  // Synchronous (done, not async): a hook every request passes costs no promise and microtask.
  app.addHook("onRequest", (request, _reply, done) => {
    if (request.raw.httpVersion === "1.1" && request.headers.host === undefined) {
      throw new HttpError(400, "BAD_REQUEST", "an HTTP/1.1 request needs a Host header");
    }
    done();
  });
}
