import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, request } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A plain round-robin HTTP balancer of node:http, as an operator puts in front of several
 * instances with no sticky sessions: each request goes to the next instance in turn, whatever its
 * path. `drop` takes a dead instance out of the rotation (a balancer's health check); an instance
 * that dies mid-request cuts its client's connection, as a TCP balancer does.
 */
export class RoundRobinProxy {
  /** Which instance served each request, in order: `METHOD path → instance`. */
  readonly served: { method: string; path: string; instance: string }[] = [];
  private next = 0;

  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    private readonly instances: string[],
    readonly url: string,
  ) {}

  /** Listens at once; instances join with `add` (they need its URL as their public address first). */
  static async start(port = 0): Promise<RoundRobinProxy> {
    const live: string[] = [];
    const server = createServer();
    server.listen(port, "127.0.0.1");
    await once(server, "listening");
    const proxy = new RoundRobinProxy(
      server,
      live,
      `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    );
    server.on("request", (incoming, outgoing) => {
      const instance = proxy.pick();
      proxy.served.push({ method: incoming.method ?? "GET", path: incoming.url ?? "/", instance });
      const target = new URL(incoming.url ?? "/", instance);
      const upstream = request(target, {
        method: incoming.method,
        headers: { ...endToEnd(incoming.headers), host: target.host },
      });
      upstream.on("response", (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
        answer.pipe(outgoing);
        answer.on("error", () => outgoing.destroy());
        answer.on("aborted", () => outgoing.destroy());
      });
      upstream.on("error", () => {
        if (outgoing.headersSent) outgoing.destroy();
        else {
          // The instance is gone: the client's connection goes with it, as through a TCP balancer.
          incoming.socket.destroy();
        }
      });
      outgoing.on("close", () => upstream.destroy());
      incoming.pipe(upstream);
    });
    return proxy;
  }

  add(instance: string): void {
    this.instances.push(instance);
  }

  /** Takes an instance out of the rotation. */
  drop(instance: string): void {
    const index = this.instances.indexOf(instance);
    if (index >= 0) this.instances.splice(index, 1);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
  }

  private pick(): string {
    const instance = this.instances[this.next % this.instances.length] as string;
    this.next = (this.next + 1) % this.instances.length;
    return instance;
  }
}

/** Hop-by-hop headers belong to one connection: each side of the balancer has its own. */
const HOP_BY_HOP = ["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"];

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.includes(name)));
}
