import { createCipheriv, createHash, randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomPublicKey, startTestApp, type TestApp } from "../support/app.js";
import { freePort } from "../support/server-process.js";

const MiB = 1024 * 1024;
/** Over the 100 MB the brief asks for, and over the free plan's 50 MiB per file. */
const SIZE = 120 * MiB;
const CHUNK = 256 * 1024;
/** The server's resident memory may grow this much while a file streams through it (a coarse check). */
const RSS_ALLOWANCE = 150 * MiB;

/**
 * `size` pseudo-random bytes from a seed (the AES-256-CTR keystream under a key derived from it),
 * made chunk by chunk as the consumer pulls and never held whole; `sha256()` is the digest of
 * every byte handed out, known once the stream has ended.
 */
function seededBytes(seed: string, size: number) {
  const keystream = keystreamAt(seed, 0);
  const hash = createHash("sha256");
  let produced = 0;
  let digest: string | null = null;
  const zeros = Buffer.alloc(CHUNK);
  return {
    *chunks(): Generator<Buffer> {
      while (produced < size) {
        const length = Math.min(CHUNK, size - produced);
        const chunk = keystream.update(zeros.subarray(0, length));
        hash.update(chunk);
        produced += length;
        yield chunk;
      }
      digest = hash.digest("hex");
    },
    sha256(): string {
      if (digest === null) throw new Error(`only ${produced} of ${size} bytes were sent`);
      return digest;
    },
  };
}

/** The generator's keystream from byte `offset` (a multiple of 16: AES-CTR counts 16-byte blocks). */
function keystreamAt(seed: string, offset: number) {
  const key = createHash("sha256").update(seed).digest();
  const counter = Buffer.alloc(16);
  counter.writeBigUInt64BE(BigInt(offset / 16), 8);
  return createCipheriv("aes-256-ctr", key, counter);
}

/** Bytes `start` to `start + length - 1` of what `seededBytes(seed, …)` produces. */
function seededSlice(seed: string, start: number, length: number): Buffer {
  return keystreamAt(seed, start).update(Buffer.alloc(length));
}

/** A pull-driven web stream over buffers: the next one is made only when the consumer asks for it. */
function streamOf(parts: Iterable<Buffer>): ReadableStream<Uint8Array> {
  const iterator = parts[Symbol.iterator]();
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const next = iterator.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
    },
    { highWaterMark: 1 },
  );
}

/** A multipart/form-data body, streamed: boundary, the text fields, one file part, the closing boundary. */
function multipartBody(
  boundary: string,
  fields: Record<string, string>,
  file: { name: string; type: string; chunks: Iterable<Buffer> },
): ReadableStream<Uint8Array> {
  function* parts(): Generator<Buffer> {
    for (const [name, value] of Object.entries(fields)) {
      yield Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
      );
    }
    yield Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="files"; filename="${file.name}"\r\n` +
        `Content-Type: ${file.type}\r\n\r\n`,
    );
    yield* file.chunks;
    yield Buffer.from(`\r\n--${boundary}--\r\n`);
  }
  return streamOf(parts());
}

/**
 * Sends a streamed body with node:http. Node 20's fetch keeps a streamed request body in memory
 * (nodejs/undici#4058), which would make the client, not the server, what the RSS bound measures.
 */
function sendStream(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: ReadableStream<Uint8Array>,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method, headers }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        text += chunk;
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
      response.on("error", reject);
    });
    request.on("error", reject);
    Readable.fromWeb(body as import("node:stream/web").ReadableStream).pipe(request);
  });
}

/** Samples this process's RSS every 50 ms from now on; `stop()` gives the largest growth seen. */
function watchRss() {
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 50);
  return {
    stop(): number {
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage().rss);
      return peak - baseline;
    },
  };
}

/** Streams a response body through SHA-256: its digest and length, without holding it. */
async function digestOf(response: Response): Promise<{ sha256: string; bytes: number }> {
  if (!response.body) throw new Error("the response has no body");
  const hash = createHash("sha256");
  let bytes = 0;
  for await (const chunk of response.body) {
    hash.update(chunk);
    bytes += chunk.length;
  }
  return { sha256: hash.digest("hex"), bytes };
}

/**
 * Files over 100 MB go through a real listening server both ways (the multipart form of
 * POST /v1/transfers, and a presigned PUT to the signed upload link), streamed from a generator
 * on the client and to disk on the server, and come back through the signed download link
 * byte for byte.
 */
describe("large files through a listening server", () => {
  let t: TestApp;
  let base: string;
  let apiKey: string;
  const auth = () => ({ authorization: `Bearer ${apiKey}` });

  beforeAll(async () => {
    // The links the API hands out name PUBLIC_BASE_URL, so the server listens where that says.
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await startTestApp({ env: { PUBLIC_BASE_URL: base } });
    await t.app.listen({ port, host: "127.0.0.1" });
    // The free plan stops a file at 50 MiB; the team plan allows 2 GiB.
    ({ apiKey } = await t.newAccount("team"));
    for (const slug of ["sender", "receiver"]) {
      const res = await t.call("POST", "/v1/agents/register", {
        key: apiKey,
        body: { agent_id: slug, public_key: randomPublicKey() },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
  });
  afterAll(async () => t?.close());

  /** Counts one download and gives the signed link of the transfer's only file. */
  async function downloadLink(id: string): Promise<string> {
    const counted = await fetch(`${base}/v1/transfers/${id}/download`, { headers: auth() });
    expect(counted.status).toBe(200);
    const body = (await counted.json()) as { files: { download_url: string; size: number }[] };
    expect(body.files).toHaveLength(1);
    const [file] = body.files;
    if (!file) throw new Error("no file");
    expect(file.size).toBe(SIZE);
    expect(file.download_url.startsWith(`${base}/v1/files/`)).toBe(true);
    return file.download_url;
  }

  /** The whole file behind a signed link, as digest and length. */
  async function fetchWhole(link: string) {
    const response = await fetch(link);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-length")).toBe(String(SIZE));
    return digestOf(response);
  }

  it("streams a 120 MiB multipart upload to disk and serves the same bytes back", async () => {
    const data = seededBytes("multipart", SIZE);
    const boundary = `----handoff-large-${randomBytes(8).toString("hex")}`;
    const body = multipartBody(
      boundary,
      { mode: "agent-to-agent", sender: "sender", recipient: "receiver", max_downloads: "1" },
      { name: "large.bin", type: "application/octet-stream", chunks: data.chunks() },
    );

    const rss = watchRss();
    const started = Date.now();
    const response = await sendStream(
      `${base}/v1/transfers`,
      "POST",
      { ...auth(), "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
    );
    const { text } = response;
    const growth = rss.stop();
    console.info(
      `multipart upload of ${SIZE / MiB} MiB: ${Date.now() - started} ms, RSS growth ${(growth / MiB).toFixed(1)} MiB`,
    );
    expect(response.status, text).toBe(201);
    const transfer = JSON.parse(text);
    expect(transfer).toMatchObject({
      status: "active",
      file_count: 1,
      total_size: SIZE,
      files: [{ name: "large.bin", size: SIZE }],
    });
    expect(growth, "the upload was held in memory rather than streamed").toBeLessThan(RSS_ALLOWANCE);

    const back = await fetchWhole(await downloadLink(transfer.id));
    expect(back.bytes).toBe(SIZE);
    expect(back.sha256).toBe(data.sha256());
  }, 300_000);

  it("takes a 120 MiB presigned PUT, confirms it, and serves the same bytes back", async () => {
    const data = seededBytes("presigned", SIZE);
    const created = await fetch(`${base}/v1/transfers/presigned`, {
      method: "POST",
      headers: { ...auth(), "content-type": "application/json" },
      body: JSON.stringify({
        mode: "agent-to-agent",
        sender: "sender",
        recipient: "receiver",
        files: [{ name: "large.bin", size: SIZE, content_type: "application/octet-stream" }],
      }),
    });
    expect(created.status).toBe(201);
    const presigned = (await created.json()) as {
      id: string;
      upload_urls: { file_id: string; upload_url: string; method: string; headers: Record<string, string> }[];
      confirm_url: string;
    };
    const [upload] = presigned.upload_urls;
    if (!upload) throw new Error("no upload URL");
    expect(upload.upload_url.startsWith(`${base}/v1/uploads/`)).toBe(true);

    const rss = watchRss();
    const started = Date.now();
    const put = await sendStream(upload.upload_url, upload.method, upload.headers, streamOf(data.chunks()));
    const putText = put.text;
    const growth = rss.stop();
    console.info(
      `presigned PUT of ${SIZE / MiB} MiB: ${Date.now() - started} ms, RSS growth ${(growth / MiB).toFixed(1)} MiB`,
    );
    expect(put.status, putText).toBe(200);
    expect(JSON.parse(putText)).toEqual({ file_id: upload.file_id, size: SIZE });
    expect(growth, "the upload was held in memory rather than streamed").toBeLessThan(RSS_ALLOWANCE);

    expect(presigned.confirm_url).toBe(`${base}/v1/transfers/${presigned.id}/confirm`);
    const confirmed = await fetch(presigned.confirm_url, { method: "POST", headers: auth() });
    const confirmedText = await confirmed.text();
    expect(confirmed.status, confirmedText).toBe(200);
    expect(JSON.parse(confirmedText)).toMatchObject({ id: presigned.id, status: "active", total_size: SIZE });

    const link = await downloadLink(presigned.id);
    const back = await fetchWhole(link);
    expect(back.bytes).toBe(SIZE);
    expect(back.sha256).toBe(data.sha256());

    // Decisions 3.16: the link honours Range, also past the first 100 MiB.
    const start = 110 * MiB;
    const end = start + MiB - 1;
    const part = await fetch(link, { headers: { range: `bytes=${start}-${end}` } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe(`bytes ${start}-${end}/${SIZE}`);
    const slice = Buffer.from(await part.arrayBuffer());
    expect(slice.length).toBe(MiB);
    expect(slice.equals(seededSlice("presigned", start, MiB))).toBe(true);
  }, 300_000);
});
