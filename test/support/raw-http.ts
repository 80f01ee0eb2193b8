import { connect } from "node:net";
import type { FastifyInstance } from "fastify";

/** Listens on a free local port; returns it. */
export async function listenLocally(app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: "127.0.0.1" });
  const address = app.server.address();
  if (!address || typeof address === "string") throw new Error("not listening");
  return address.port;
}

export interface RawExchange {
  /** Everything the server sent. */
  received: Buffer;
  /** Whether the server closed the connection before `waitMs` ran out. */
  closedByServer: boolean;
  elapsedMs: number;
}

export interface RawSend {
  /** Written in order; a number waits that many milliseconds. */
  steps: (string | Buffer | number)[];
  /** Half-close the connection after the last step (the body is cut short). */
  end?: boolean;
  /** How long to wait for the server after the last step. */
  waitMs?: number;
}

/** Sends raw bytes over a plain TCP connection, exactly as given, and collects the answer. */
export function rawExchange(
  port: number,
  { steps, end = false, waitMs = 3000 }: RawSend,
): Promise<RawExchange> {
  return new Promise((resolve) => {
    const started = Date.now();
    const chunks: Buffer[] = [];
    const socket = connect(port, "127.0.0.1");
    let done = false;
    let waiting: NodeJS.Timeout | undefined;
    const finish = (closedByServer: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(waiting);
      socket.destroy();
      resolve({ received: Buffer.concat(chunks), closedByServer, elapsedMs: Date.now() - started });
    };
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("close", () => finish(true));
    socket.on("error", () => finish(true));
    socket.on("connect", async () => {
      for (const step of steps) {
        if (done) return;
        if (typeof step === "number") await new Promise((r) => setTimeout(r, step));
        else if (!socket.destroyed) socket.write(step);
      }
      if (end && !socket.destroyed) socket.end();
      waiting = setTimeout(() => finish(false), waitMs);
    });
  });
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The first HTTP response in `bytes`, or null when there is none. */
export function firstResponse(bytes: Buffer): RawResponse | null {
  const text = bytes.toString("latin1");
  const headEnd = text.indexOf("\r\n\r\n");
  const statusLine = /^HTTP\/1\.1 (\d{3})/.exec(text);
  if (headEnd < 0 || !statusLine) return null;
  const headers: Record<string, string> = {};
  for (const line of text.slice(0, headEnd).split("\r\n").slice(1)) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers["content-length"] ?? Number.NaN);
  const rest = text.slice(headEnd + 4);
  return {
    status: Number(statusLine[1]),
    headers,
    body: Number.isFinite(length) ? rest.slice(0, length) : rest,
  };
}
