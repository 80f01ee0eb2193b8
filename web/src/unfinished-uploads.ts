/**
 * Sends that began and did not finish (decisions 7.2: "the web app resumes after a page
 * reload"). A page cannot open a file again by its path, so what is kept is what recognises the
 * file when the person chooses it again (name, size, last change) and what the upload needs to go
 * on: the transfer, each file's `resumable_url` and salt, and K, the transfer's content key, which
 * seals the records again from the one holding the server's offset. Kept in this origin's
 * localStorage, per account, so a closed tab or a crashed browser can still finish; removed when
 * the send completes, when it is discarded, and at logout. It lives no longer than the upload
 * links (`expires_at`).
 */
export interface UnfinishedFile {
  name: string;
  /** The chosen file's size and last change: a file that differs is not the one begun. */
  size: number;
  last_modified: number;
  type: string;
  wire_size: number;
  resumable_url: string;
  encryption_iv: string;
}

export interface UnfinishedUpload {
  transfer_id: string;
  recipient: string;
  expires_at: string;
  /** K, base64: a secret, as the CLI's send state file holds it (mode 0600). */
  content_key: string;
  files: UnfinishedFile[];
}

const PREFIX = "handoff.unfinished-uploads.";

function read(accountId: string): UnfinishedUpload[] {
  try {
    return JSON.parse(localStorage.getItem(PREFIX + accountId) ?? "[]") as UnfinishedUpload[];
  } catch {
    return [];
  }
}

function write(accountId: string, uploads: UnfinishedUpload[]): void {
  if (uploads.length === 0) localStorage.removeItem(PREFIX + accountId);
  else localStorage.setItem(PREFIX + accountId, JSON.stringify(uploads));
}

/** The account's unfinished uploads whose links still live; expired ones are dropped. */
export function unfinishedUploads(accountId: string): UnfinishedUpload[] {
  const all = read(accountId);
  const live = all.filter((upload) => Date.parse(upload.expires_at) > Date.now());
  if (live.length !== all.length) write(accountId, live);
  return live;
}

/** Written before the first byte is sent, so a reload at any point can go on. */
export function rememberUpload(accountId: string, upload: UnfinishedUpload): void {
  write(accountId, [...read(accountId).filter((u) => u.transfer_id !== upload.transfer_id), upload]);
}

export function forgetUpload(accountId: string, transferId: string): void {
  write(
    accountId,
    read(accountId).filter((upload) => upload.transfer_id !== transferId),
  );
}

/** At logout: nothing of a send, K least of all, stays behind for the next person at this browser. */
export function forgetAllUploads(): void {
  for (const key of Object.keys(localStorage)) if (key.startsWith(PREFIX)) localStorage.removeItem(key);
}

/** Whether `file` is the one the upload began with, as far as a page can tell. */
export const sameFile = (file: File, begun: UnfinishedFile) =>
  file.name === begun.name && file.size === begun.size && file.lastModified === begun.last_modified;
