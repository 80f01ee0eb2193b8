import { randomBytes } from "node:crypto";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** Rewrites a JSON answer of the path it is given, as a compromised operator would; null leaves it alone. */
export type Rewrite = (path: string, body: Record<string, unknown>) => Record<string, unknown> | null;

export interface RewritingProxy {
  url: string;
  close(): Promise<void>;
}

/**
 * A proxy in front of `target` that forwards everything and lets `rewrite` change any successful
 * JSON answer: the server a client talks to lying about keys or the log, with the real one behind.
 */
export async function rewritingProxy(target: string, rewrite: Rewrite): Promise<RewritingProxy> {
  const upstream = new URL(target);
  const server = createServer((incoming, outgoing) => {
    const path = incoming.url ?? "/";
    const forwarded = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path,
        method: incoming.method,
        headers: incoming.headers,
      },
      (answer) => {
        const json = answer.statusCode === 200 && /json/.test(answer.headers["content-type"] ?? "");
        if (!json) {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
          return;
        }
        const chunks: Buffer[] = [];
        answer.on("data", (chunk: Buffer) => chunks.push(chunk));
        answer.on("end", () => {
          const original = Buffer.concat(chunks).toString("utf8");
          const changed = rewrite(path, JSON.parse(original));
          const text = changed ? JSON.stringify(changed) : original;
          outgoing.writeHead(200, {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(text),
          });
          outgoing.end(text);
        });
      },
    );
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => closeServer(server),
  };
}

export function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** The path of a request link's answer (GET by-token), which a lying server rewrites. */
export const LINK_ANSWER = /^\/v1\/requests\/by-token\/[^/]+$/;

/** Answers every request link with another public key for its agent, its key_proof left alone. */
export const swapLinkKey: Rewrite = (path, body) =>
  LINK_ANSWER.test(path)
    ? { ...body, agent: { ...(body.agent as object), public_key: randomBytes(32).toString("base64") } }
    : null;
