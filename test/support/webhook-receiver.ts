import { createServer, type IncomingHttpHeaders, type RequestListener, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";

export interface Received {
  /** The path and query it was sent to. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** When it arrived, on the real clock. */
  at: number;
  /** The status answered; undefined while (or when) it hangs. */
  answered?: number;
}

/** What the receiver does with a request: answer a status (and headers), or say nothing at all. */
export type Answer = { status: number; headers?: Record<string, string> } | "hang";

/** A webhook endpoint (on 127.0.0.1 unless told) that records every request and answers as told. */
export interface Receiver {
  url: string;
  received: Received[];
  /** Decides each answer, given the request and how many came before it (default: 200). */
  answer: (request: Received, index: number) => Answer;
  /** The received bodies, parsed. */
  messages(): { type: string; timestamp: string; data: Record<string, unknown> }[];
  close(): Promise<void>;
}

export interface ReceiverPlace {
  /** The address it listens on and its URL names (default 127.0.0.1). */
  host?: string;
  /** Serves https:// with this key and certificate (PEM) instead of http://. */
  tls?: { key: string; cert: string };
}

export async function startReceiver(path = "/hook", place: ReceiverPlace = {}): Promise<Receiver> {
  const host = place.host ?? "127.0.0.1";
  const hanging = new Set<ServerResponse>();
  const receiver: Receiver = {
    url: "",
    received: [],
    answer: () => ({ status: 200 }),
    messages: () => receiver.received.map((r) => JSON.parse(r.body)),
    close: async () => {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const handle: RequestListener = (request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const received: Received = {
        url: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
        at: Date.now(),
      };
      const index = receiver.received.length;
      receiver.received.push(received);
      const answer = receiver.answer(received, index);
      if (answer === "hang") {
        hanging.add(response);
        return;
      }
      received.answered = answer.status;
      response.writeHead(answer.status, answer.headers).end("ok");
    });
  };
  const server = place.tls ? createTlsServer(place.tls, handle) : createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const scheme = place.tls ? "https" : "http";
  receiver.url = `${scheme}://${host}:${(server.address() as AddressInfo).port}${path}`;
  return receiver;
}

/** A port on 127.0.0.1 nobody listens on: a connection there is refused. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
