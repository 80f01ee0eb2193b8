/**
 * The large-transfer baseline: a plain node:http server with nothing but the disk in between.
 * PUT/POST /blobs/<name> streams the request body to a file with stream.pipeline; GET /blobs/<name>
 * streams it back (DELETE removes it, outside any timing). No framework, no parsing, no database.
 *
 *   BASELINE_DIR=/tmp/x PORT=9000 node --import tsx bench/baseline-server.ts
 *
 * It is the fair comparison for Handoff's filesystem blob store, so it moves bytes the same way:
 * 1 MiB stream buffers both ways, and the file fsynced (`flush: true`) before the 201 answer.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, rm, stat } from "node:fs/promises";
import http from "node:http";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { STREAM_CHUNK } from "../src/blobs/byte-streams.js";
import { answer } from "./answer.js";

const dir = process.env.BASELINE_DIR;
if (!dir) throw new Error("BASELINE_DIR is required");
const port = Number(process.env.PORT ?? 0);
const host = process.env.HOST ?? "127.0.0.1";
await mkdir(dir, { recursive: true });

const server = http.createServer(async (request, response) => {
  try {
    const url = new URL(request.url ?? "/", "http://baseline");
    if (url.pathname === "/healthz") return answer(response, 200, { status: "ok" });
    const match = /^\/blobs\/([A-Za-z0-9._-]+)$/.exec(url.pathname);
    if (!match?.[1]) return answer(response, 404, { error: "not found" });
    const path = join(dir, match[1]);

    if (request.method === "PUT" || request.method === "POST") {
      const file = createWriteStream(path, { flush: true, highWaterMark: STREAM_CHUNK });
      await pipeline(request, file);
      return answer(response, 201, { size: file.bytesWritten });
    }
    if (request.method === "GET") {
      const { size } = await stat(path);
      response.writeHead(200, { "content-type": "application/octet-stream", "content-length": size });
      await pipeline(createReadStream(path, { highWaterMark: STREAM_CHUNK }), response);
      return;
    }
    if (request.method === "DELETE") {
      await rm(path, { force: true });
      return answer(response, 200, { deleted: match[1] });
    }
    return answer(response, 405, { error: "method not allowed" });
  } catch (error) {
    if (!response.headersSent) answer(response, 500, { error: String(error) });
    else response.destroy();
  }
});

server.listen(port, host, () => {
  const address = server.address();
  const bound = address && typeof address === "object" ? address.port : port;
  console.log(`baseline listening on http://${host}:${bound}, files in ${dir}`);
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => server.close(() => process.exit(0)));
}
