import type { IncomingMessage } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { protocolErrorBody } from "./errors.js";
import type { TimeLimits } from "./limits.js";

const carriesBody = (raw: IncomingMessage) =>
  raw.headers["transfer-encoding"] !== undefined || Number(raw.headers["content-length"] ?? 0) > 0;

/** Answers 408 in the one error body if nothing has been answered yet, then closes the connection. */
function timeOut(request: FastifyRequest, reply: FastifyReply): void {
  const socket = request.raw.socket;
  const response = reply.raw;
  request.log.info("request body too slow: closing the connection");
  if (response.headersSent) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(protocolErrorBody(408, "the request body stopped arriving"));
  response.writeHead(408, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    connection: "close",
  });
  response.end(body, () => socket.destroy());
  // The client may never read the answer: close anyway.
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * Bounds the time between body bytes (docs/security.md): while a request's body is still
 * arriving, every window must bring `bodyMinBytes`, counted on the socket. Bytes the server has
 * not read yet (its disk is slower than the client) mean the client is not the slow side. The
 * watch lives with the request, never on the connection, so keep-alive adds nothing up.
 */
export function registerSlowBodyGuard(app: FastifyInstance, limits: TimeLimits): void {
  app.addHook("onRequest", (request, reply, done) => {
    watchBody(request, reply, limits);
    done();
  });
}

function watchBody(request: FastifyRequest, reply: FastifyReply, limits: TimeLimits): void {
  const raw = request.raw;
  const socket = raw.socket;
  // Injected requests (tests) have no connection to watch.
  if (!carriesBody(raw) || raw.complete || typeof socket?.bytesRead !== "number") return;
  let seen = socket.bytesRead;
  const timer = setInterval(() => {
    if (raw.complete || socket.destroyed || reply.raw.writableEnded) return stop();
    const moved = socket.bytesRead - seen;
    seen = socket.bytesRead;
    if (moved >= limits.bodyMinBytes || raw.readableLength > 0) return;
    stop();
    timeOut(request, reply);
  }, limits.bodyWindowMs);
  timer.unref();
  const stop = () => clearInterval(timer);
  raw.once("end", stop);
  raw.once("close", stop);
  reply.raw.once("finish", stop);
  reply.raw.once("close", stop);
}
