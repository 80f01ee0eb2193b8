/**
 * The messages between the pages and the service worker that streams a decrypted download
 * (web/sw/sw.ts). Shared by both builds so the two sides cannot drift apart.
 */
export const DOWNLOAD_PATH = "/_handoff/download/";

export interface DownloadJob {
  /** The signed download link of the encrypted file (decisions 3.16). */
  url: string;
  name: string;
  /** Plaintext size, announced as Content-Length so the browser shows real progress. */
  size: number;
  contentKey: Uint8Array;
  encryptionIv: string;
}

export type PageToWorker = { type: "download"; id: string; job: DownloadJob };

export type WorkerToPage =
  | { type: "ready" }
  | { type: "progress"; bytes: number }
  | { type: "done"; bytes: number }
  | { type: "error"; message: string };

/** A Content-Disposition that keeps any file name intact (RFC 6266 / 5987). */
export function attachment(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}
