/// <reference lib="webworker" />
/**
 * The service worker that saves decrypted files as a stream (decisions 4.8): the page hands it
 * a job (signed link, content key, IV) over a MessageChannel, then navigates to
 * /_handoff/download/<id>; this worker answers that navigation with the encrypted file piped
 * through the crypto core's decrypt stream, as an attachment. The browser writes it to disk as
 * it arrives, so memory stays flat at any file size. A record that fails authentication errors
 * the stream: the browser marks the download failed and the page says why.
 */
import { createDecryptStream } from "@handoff/sdk/crypto";
import {
  attachment,
  DOWNLOAD_PATH,
  type DownloadJob,
  type PageToWorker,
  type WorkerToPage,
} from "../src/save-protocol.js";

declare const self: ServiceWorkerGlobalScope;

interface Pending {
  job: DownloadJob;
  port: MessagePort;
}

/** Jobs waiting for their navigation; each is served once. */
const pending = new Map<string, Pending>();
const PROGRESS_EVERY_BYTES = 1024 * 1024;

self.addEventListener("install", () => {
  void self.skipWaiting();
});
self.addEventListener("activate", (event) => {
  event.waitUntil(self.clients.claim());
});

self.addEventListener("message", (event) => {
  const message = event.data as PageToWorker;
  const port = event.ports[0];
  if (message?.type !== "download" || !port) return;
  pending.set(message.id, { job: message.job, port });
  post(port, { type: "ready" });
});

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (url.origin !== self.location.origin || !url.pathname.startsWith(DOWNLOAD_PATH)) return;
  const id = url.pathname.slice(DOWNLOAD_PATH.length);
  const entry = pending.get(id);
  pending.delete(id);
  event.respondWith(entry ? serve(entry) : nothing());
});

function post(port: MessagePort, message: WorkerToPage): void {
  port.postMessage(message);
}

/** No content: the navigation leaves the page where it is, and the page says what went wrong. */
function nothing(): Response {
  return new Response(null, { status: 204 });
}

async function serve({ job, port }: Pending): Promise<Response> {
  let encrypted: Response;
  try {
    encrypted = await fetch(job.url);
  } catch {
    post(port, { type: "error", message: "the file could not be fetched; check your connection" });
    return nothing();
  }
  if (!encrypted.ok || !encrypted.body) {
    post(port, { type: "error", message: `the file could not be fetched (HTTP ${encrypted.status})` });
    return nothing();
  }
  const plain = encrypted.body.pipeThrough(createDecryptStream(job.contentKey, job.encryptionIv));
  job.contentKey.fill(0);
  return new Response(reporting(plain, port), {
    headers: {
      "content-type": "application/octet-stream",
      "content-disposition": attachment(job.name),
      "content-length": String(job.size),
      "x-content-type-options": "nosniff",
    },
  });
}

/** Passes the decrypted bytes on, telling the page how far it got, and how it ended. */
function reporting(plain: ReadableStream<Uint8Array>, port: MessagePort): ReadableStream<Uint8Array> {
  const reader = plain.getReader();
  let bytes = 0;
  let reported = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          post(port, { type: "done", bytes });
          return;
        }
        bytes += value.length;
        controller.enqueue(value);
        if (bytes - reported >= PROGRESS_EVERY_BYTES) {
          reported = bytes;
          post(port, { type: "progress", bytes });
        }
      } catch (error) {
        post(port, { type: "error", message: (error as Error).message });
        controller.error(error);
      }
    },
    cancel(reason) {
      post(port, { type: "error", message: "the download was cancelled" });
      return reader.cancel(reason);
    },
  });
}
