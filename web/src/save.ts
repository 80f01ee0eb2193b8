import { createDecryptStream } from "@handoff/sdk/crypto";
import { DOWNLOAD_PATH, type DownloadJob, type PageToWorker, type WorkerToPage } from "./save-protocol.js";

/** How long the page waits for the service worker to take control on a first visit. */
const WORKER_WAIT_MS = 3000;

/** Registers the streaming-download worker; the app works without it, with the in-memory fallback. */
export function registerDownloadWorker(): void {
  if (!("serviceWorker" in navigator)) return;
  navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => {
    // Private windows and some browsers refuse service workers: downloads use the fallback.
  });
}

async function controllingWorker(): Promise<ServiceWorker | null> {
  if (!("serviceWorker" in navigator)) return null;
  const container = navigator.serviceWorker;
  if (container.controller) return container.controller;
  const ready = Promise.race([
    container.ready.then(
      () =>
        container.controller ??
        new Promise<ServiceWorker | null>((resolve) =>
          container.addEventListener("controllerchange", () => resolve(container.controller), { once: true }),
        ),
    ),
    new Promise<null>((resolve) => setTimeout(() => resolve(null), WORKER_WAIT_MS)),
  ]);
  return ready;
}

export type SaveMethod = "stream" | "memory";

/**
 * Saves one encrypted file decrypted, reporting plaintext bytes. Streams through the service
 * worker when one controls the page (flat memory at any size); otherwise decrypts into a Blob
 * and saves that, which needs about the file's size in memory.
 */
export async function saveDecrypted(
  job: DownloadJob,
  onProgress: (bytes: number) => void,
): Promise<SaveMethod> {
  const worker = await controllingWorker();
  if (worker) {
    await saveThroughWorker(worker, job, onProgress);
    return "stream";
  }
  await saveFromMemory(job, onProgress);
  return "memory";
}

function saveThroughWorker(worker: ServiceWorker, job: DownloadJob, onProgress: (bytes: number) => void) {
  const id = crypto.randomUUID();
  const channel = new MessageChannel();
  return new Promise<void>((resolve, reject) => {
    channel.port1.onmessage = (event: MessageEvent<WorkerToPage>) => {
      const message = event.data;
      switch (message.type) {
        case "ready":
          startNavigation(`${DOWNLOAD_PATH}${id}`);
          return;
        case "progress":
          onProgress(message.bytes);
          return;
        case "done":
          onProgress(message.bytes);
          channel.port1.close();
          resolve();
          return;
        case "error":
          channel.port1.close();
          reject(new Error(`${job.name}: ${message.message}`));
      }
    };
    const message: PageToWorker = { type: "download", id, job };
    worker.postMessage(message, [channel.port2]);
  });
}

/** Opens a URL the way a clicked link does; an attachment answer leaves this page where it is. */
function startNavigation(href: string, fileName?: string): void {
  const link = document.createElement("a");
  link.href = href;
  if (fileName) link.download = fileName;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
}

async function saveFromMemory(job: DownloadJob, onProgress: (bytes: number) => void): Promise<void> {
  const encrypted = await fetch(job.url);
  if (!encrypted.ok || !encrypted.body)
    throw new Error(`${job.name}: the file could not be fetched (HTTP ${encrypted.status})`);
  let bytes = 0;
  const counted = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      bytes += chunk.length;
      onProgress(bytes);
      controller.enqueue(chunk);
    },
  });
  const plain = encrypted.body
    .pipeThrough(createDecryptStream(job.contentKey, job.encryptionIv))
    .pipeThrough(counted);
  // Only a stream that ended cleanly (every record authenticated, last one flagged) is offered.
  const blob = await new Response(plain).blob();
  const url = URL.createObjectURL(blob);
  startNavigation(url, job.name);
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
