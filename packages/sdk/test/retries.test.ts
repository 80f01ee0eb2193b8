import { once } from "node:events";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { HandoffApiError, HandoffClient } from "@handoff/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../test/support/server-process.js";
import { forwardTo } from "./cutting-proxy.js";
import { type LiveServer, newAgent, startLiveServer, type TestAgent, tempDir } from "./support.js";

async function listen(server: Server, port = 0): Promise<string> {
  server.listen(port, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("429 Retry-After (a local stub: the real limits need a minute to reset)", () => {
  const hits: number[] = [];
  let stub: Server;
  let baseUrl: string;

  beforeAll(async () => {
    stub = createServer((req, res) => {
      hits.push(Date.now());
      if (hits.length === 1 || req.url?.includes("always")) {
        res.writeHead(429, { "content-type": "application/json", "retry-after": "1" });
        res.end(JSON.stringify({ error: { code: "RATE_LIMITED", message: "slow down", status: 429 } }));
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ transfers: [], next_cursor: null, has_more: false }));
    });
    baseUrl = await listen(stub);
  });
  afterAll(() => stub?.close());

  it("waits the seconds Retry-After names, then succeeds", async () => {
    const client = new HandoffClient({ baseUrl, apiKey: "hnd_test" });
    const page = await client.inbox();
    expect(page.transfers).toEqual([]);
    expect(hits).toHaveLength(2);
    expect((hits[1] as number) - (hits[0] as number)).toBeGreaterThanOrEqual(950);
  });

  it("gives up after maxRetries with the API's RATE_LIMITED", async () => {
    hits.length = 0;
    const client = new HandoffClient({ baseUrl: `${baseUrl}/always`, apiKey: "hnd_test", maxRetries: 1 });
    const error = await client.inbox().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HandoffApiError);
    expect(error).toMatchObject({ status: 429, code: "RATE_LIMITED", message: "slow down" });
    expect(hits).toHaveLength(2);
  });
});

/**
 * A proxy in front of the real server that passes every request through but, for the requests
 * `drop` picks, lets the server finish and then cuts the connection instead of answering: the
 * client never learns that its request succeeded.
 */
class DroppingProxy {
  readonly seen: { method: string; url: string; idempotencyKey: string | undefined; dropped: boolean }[] = [];
  drop: (req: IncomingMessage) => boolean = () => false;
  private readonly server: Server;
  url = "";

  constructor(private readonly upstreamPort: () => number) {
    this.server = createServer((req, res) => {
      const dropped = this.drop(req);
      this.seen.push({
        method: req.method ?? "",
        url: req.url ?? "",
        idempotencyKey: req.headers["idempotency-key"] as string | undefined,
        dropped,
      });
      const upstream = forwardTo(this.upstreamPort(), req, (answer) => {
        if (dropped) {
          answer.resume();
          answer.on("end", () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      req.pipe(upstream);
    });
  }

  async start(port: number): Promise<void> {
    this.url = await listen(this.server, port);
  }

  close() {
    this.server.close();
  }
}

describe("a retried send never doubles", () => {
  let server: LiveServer;
  let proxy: DroppingProxy;
  let apiKey: string;
  let alice: TestAgent;
  let bob: TestAgent;
  const dir = tempDir();

  beforeAll(async () => {
    const proxyPort = await freePort();
    const proxyUrl = `http://127.0.0.1:${proxyPort}`;
    // Links the server hands out (presigned uploads) go through the proxy as well.
    server = await startLiveServer({ PUBLIC_BASE_URL: proxyUrl });
    proxy = new DroppingProxy(() => Number(new URL(server.baseUrl).port));
    await proxy.start(proxyPort);
    ({ apiKey } = await server.t.newAccount("team"));
    alice = await newAgent(server, apiKey, "alice");
    bob = await newAgent(server, apiKey, "bob");
  });
  afterAll(async () => {
    proxy?.close();
    await server?.close();
    dir.cleanup();
  });

  /** A client of `who` that talks through the proxy. */
  function viaProxy(who: TestAgent, threshold: number) {
    return new HandoffClient({
      baseUrl: proxy.url,
      apiKey,
      identity: who.identity,
      presignedThreshold: threshold,
    });
  }

  async function sentTransfers(): Promise<string[]> {
    const res = await server.t.call("GET", "/v1/transfers?direction=sent&limit=100", { key: apiKey });
    return (res.json() as { transfers: { id: string }[] }).transfers.map((t) => t.id);
  }

  it.each([
    ["the multipart POST", Number.MAX_SAFE_INTEGER, (req: IncomingMessage) => req.url === "/v1/transfers"],
    ["the presigned POST", 0, (req: IncomingMessage) => req.url === "/v1/transfers/presigned"],
    ["a presigned PUT", 0, (req: IncomingMessage) => req.method === "PUT"],
    ["the confirm", 0, (req: IncomingMessage) => req.url?.endsWith("/confirm") === true],
  ])("whose answer to %s is lost", async (_step, threshold, matches) => {
    const path = join(dir.path, `retry-${threshold}-${Math.random()}.bin`);
    writeFileSync(path, Buffer.alloc(100_000, 9));
    const before = await sentTransfers();
    let dropped = false;
    proxy.drop = (req) => {
      if (dropped || !matches(req)) return false;
      dropped = true;
      return true;
    };
    proxy.seen.length = 0;
    const transfer = await viaProxy(alice, threshold).send({ to: "bob", paths: [path] });
    proxy.drop = () => false;
    expect(dropped).toBe(true);

    const retried = proxy.seen.filter((s) => matches({ url: s.url, method: s.method } as IncomingMessage));
    expect(retried.map((s) => s.dropped)).toEqual([true, false]);
    // A POST's retry carries the same Idempotency-Key as its first attempt.
    if (retried[0]?.method === "POST") {
      expect(retried[0].idempotencyKey).toBeDefined();
      expect(retried[1]?.idempotencyKey).toBe(retried[0].idempotencyKey);
    }
    const after = await sentTransfers();
    expect(after.filter((id) => !before.includes(id))).toEqual([transfer.id]);
    expect(transfer.status).toBe("active");

    // The retried bytes are the ones that were signed: the transfer decrypts and verifies.
    const outDir = join(dir.path, `out-${transfer.id}`);
    const received = await bob.client.receive(transfer.id, { outDir });
    expect(readFileSync(received.files[0]?.path as string).equals(Buffer.alloc(100_000, 9))).toBe(true);
  });

  it("does not retry a counted download after a lost answer", async () => {
    const path = join(dir.path, "once.txt");
    writeFileSync(path, "once");
    const transfer = await alice.client.send({ to: "bob", paths: [path] });
    proxy.drop = (req) => req.url?.endsWith("/download") === true;
    const error = await viaProxy(bob, 0)
      .receive(transfer.id, { outDir: join(dir.path, "once") })
      .catch((e: unknown) => e);
    proxy.drop = () => false;
    expect(error).toMatchObject({ code: "NETWORK_ERROR" });
    expect((await bob.client.transfer(transfer.id)).downloads).toBe(1);
  });
});
