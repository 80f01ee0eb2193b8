/**
 * Sends that began and did not finish (decisions 7.2: "the web app resumes after a page
 * reload"). A page cannot open a file again by its path, so what is kept is what recognises the
 * file when the person chooses it again (name, size, last change) and what the upload needs to go
 * on: the transfer, each file's `resumable_url` and salt, and K, the transfer's content key, which
 * seals the records again from the one holding the server's offset. Kept in this origin's
 * localStorage, per owner (an account, or a request link a person answers without one), so a
 * closed tab or a crashed browser can still finish; removed when the send completes, when it is
 * discarded, and at logout. It lives no longer than the upload links (`expires_at`).
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

function read(owner: string): UnfinishedUpload[] {
  try {
    return JSON.parse(localStorage.getItem(PREFIX + owner) ?? "[]") as UnfinishedUpload[];
  } catch {
    return [];
  }
}

function write(owner: string, uploads: UnfinishedUpload[]): void {
  if (uploads.length === 0) localStorage.removeItem(PREFIX + owner);
  else localStorage.setItem(PREFIX + owner, JSON.stringify(uploads));
}

/** The owner's unfinished uploads whose links still live; expired ones are dropped. */
export function unfinishedUploads(owner: string): UnfinishedUpload[] {
  const all = read(owner);
  const live = all.filter((upload) => Date.parse(upload.expires_at) > Date.now());
  if (live.length !== all.length) write(owner, live);
  return live;
}

/** Written before the first byte is sent, so a reload at any point can go on. */
export function rememberUpload(owner: string, upload: UnfinishedUpload): void {
  write(owner, [...read(owner).filter((u) => u.transfer_id !== upload.transfer_id), upload]);
}

export function forgetUpload(owner: string, transferId: string): void {
  write(
    owner,
    read(owner).filter((upload) => upload.transfer_id !== transferId),
  );
}

/** At logout: nothing of a send, K least of all, stays behind for the next person at this browser. */
export function forgetAllUploads(): void {
  for (const key of Object.keys(localStorage)) if (key.startsWith(PREFIX)) localStorage.removeItem(key);
}
