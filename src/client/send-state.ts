import { mkdir, open, readFile, rename, rm, rmdir } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { HandoffError, type SendState } from "@handoff/sdk";
import { UsageError } from "../cli-errors.js";

/** What `handoff send` hands out as a transfer's id (`tr_` and 24 characters), and nothing that climbs out of a folder. */
const TRANSFER_ID = /^tr_[A-Za-z0-9_-]{1,64}$/;

/** The transfer --resume names, refused before it becomes part of a path. */
export function transferIdOption(text: string): string {
  if (!TRANSFER_ID.test(text)) throw new UsageError(`--resume needs a transfer id (tr_…), got "${text}"`);
  return text;
}

/**
 * Decisions 7.2: an unfinished send's state lives beside the identity file that sends it,
 * `<identity>.sends/<transfer id>.json`.
 */
export function sendStatePath(identityPath: string, transferId: string): string {
  return `${resolve(identityPath)}.sends/${transferId}.json`;
}

/**
 * Keeps a send's state before its first byte goes: mode 0600 from its first byte (it holds K, the
 * key to the files), written whole to a temporary file and renamed over, so a crash leaves the
 * state as it was or as it is, never half of it.
 */
export async function writeSendState(identityPath: string, state: SendState): Promise<void> {
  const path = sendStatePath(identityPath, state.transfer_id);
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  const handle = await open(temporary, "w", 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(state, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
}

/** The state of an interrupted send, or an error that says why there is none to resume. */
export async function readSendState(identityPath: string, transferId: string): Promise<SendState> {
  const path = sendStatePath(identityPath, transferId);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    throw new HandoffError(
      "NO_SEND_STATE",
      `no interrupted send of ${transferId} for ${identityPath} (${path} does not exist): it completed, or it was sent with another identity file`,
    );
  }
  const state = parsed(text);
  if (state?.transfer_id !== transferId)
    throw new HandoffError("BAD_SEND_STATE", `${path} is not the state of the send of ${transferId}`);
  return state;
}

function parsed(text: string): SendState | null {
  try {
    const state = JSON.parse(text) as SendState;
    const wellFormed =
      typeof state.expires_at === "string" &&
      (state.content_key === null || typeof state.content_key === "string") &&
      Array.isArray(state.files) &&
      state.files.every(
        (file) =>
          typeof file.path === "string" &&
          typeof file.name === "string" &&
          Number.isSafeInteger(file.size) &&
          typeof file.modified_ms === "number" &&
          typeof file.resumable_url === "string" &&
          (file.encryption_iv === null || typeof file.encryption_iv === "string"),
      );
    return wellFormed ? state : null;
  } catch {
    return null;
  }
}

/** Removes a send's state once nothing is left to resume, and its folder when that is empty. */
export async function removeSendState(identityPath: string, transferId: string): Promise<void> {
  const path = sendStatePath(identityPath, transferId);
  await rm(path, { force: true });
  await rmdir(dirname(path)).catch(() => {});
}
