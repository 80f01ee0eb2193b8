import { once } from "node:events";
import { type ClientRequest, createServer, type IncomingMessage, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

/** `req` passed on to the server on 127.0.0.1:`port`, its body still to come; `onAnswer` gets the answer. */
export function forwardTo(
  port: number,
  req: IncomingMessage,
  onAnswer: (answer: IncomingMessage) => void,
): ClientRequest {
  return request(
    { host: "127.0.0.1", port, path: req.url, method: req.method, headers: req.headers },
    onAnswer,
  );
}

/** One PATCH the proxy saw: where it started, how many body bytes it passed on, whether it cut it. */
export interface SeenPatch {
  offset: number;
  forwarded: number;
  cut: boolean;
}

/**
 * An HTTP proxy in front of the real server that passes every request through, except that it
 * cuts the connection of a PATCH after the number of body bytes `cuts` names for it (the first
 * PATCH takes the first number, and so on; later PATCHes pass): the bytes before the cut reach
 * the server, then both connections close, as when a network drops mid-upload. `bytesPerSecond`
 * slows request bodies down, so that a test can kill a client mid-upload.
 */
export class CuttingProxy {
  cuts: number[] = [];
  bytesPerSecond = Number.POSITIVE_INFINITY;
  readonly patches: SeenPatch[] = [];
  /** Told of each PATCH as it begins, before any of its bytes reach the server. */
  onPatch: () => void = () => {};
  url = "";
  private readonly server: Server;

  constructor(private readonly upstreamPort: () => number) {
    this.server = createServer((req, res) => {
      const cutAt = req.method === "PATCH" ? this.cuts.shift() : undefined;
      const seen = { offset: Number(req.headers["upload-offset"]), forwarded: 0, cut: false };
      if (req.method === "PATCH") {
        this.patches.push(seen);
        this.onPatch();
      }
      const upstream = forwardTo(this.upstreamPort(), req, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on("error", () => res.destroy());
      // A client that dies mid-request (SIGKILL) closes its connection: the server's goes too.
      req.on("close", () => {
        if (!req.complete) upstream.destroy();
      });
      const cut = () => {
        seen.cut = true;
        req.socket.destroy();
        upstream.destroy();
      };
      if (cutAt === 0) return cut();
      req.on("data", (chunk: Buffer) => {
        const room = cutAt === undefined ? chunk.length : cutAt - seen.forwarded;
        const part = chunk.subarray(0, room);
        seen.forwarded += part.length;
        // The bytes before the cut are on their way to the server before both ends close.
        if (part.length < chunk.length || seen.forwarded === cutAt) {
          req.pause();
          upstream.write(part, cut);
          return;
        }
        const waits: Promise<unknown>[] = [];
        if (!upstream.write(part)) waits.push(once(upstream, "drain"));
        if (Number.isFinite(this.bytesPerSecond))
          waits.push(sleep((part.length / this.bytesPerSecond) * 1000));
        if (waits.length > 0) {
          req.pause();
          Promise.all(waits).then(
            () => req.resume(),
            () => req.destroy(),
          );
        }
      });
      req.on("end", () => upstream.end());
    });
  }

  async start(port: number): Promise<void> {
    this.server.listen(port, "127.0.0.1");
    await once(this.server, "listening");
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): void {
    this.server.closeAllConnections();
    this.server.close();
  }
}
