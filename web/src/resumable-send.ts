import { encryptedSize, fromBase64, SALT_SIZE, toBase64 } from "@handoff/sdk/crypto";
import { formatBytes, formatDate } from "./format.js";
import { uploadThroughTus } from "./tus-upload.js";
import type { UnfinishedFile, UnfinishedUpload } from "./unfinished-uploads.js";

/**
 * A file to send and the name it goes under: its own name, or its path within a chosen or dropped
 * folder (decisions 7.3: `project/docs/guide.txt`). A File's own name cannot carry the path (the
 * File API may rewrite a `/` in it), so the two travel together.
 */
export interface ChosenFile {
  name: string;
  file: File;
}

/** Files chosen one by one: each goes under its own name. */
export const byOwnName = (files: File[]): ChosenFile[] => files.map((file) => ({ name: file.name, file }));

export type SendStage =
  | { stage: "encrypting"; file: string; bytes: number; total: number }
  | { stage: "uploading"; bytes: number; total: number };

/** A file as a presigned transfer declares it, before the server hands out its upload link. */
export type DeclaredFile = Omit<UnfinishedFile, "resumable_url">;

/** Each file's size on the wire (HOE1, decisions 5.3) and a fresh salt: what the create declares. */
export function declareFiles(files: ChosenFile[]): DeclaredFile[] {
  return files.map(({ name, file }) => ({
    name,
    size: file.size,
    last_modified: file.lastModified,
    type: file.type || "application/octet-stream",
    wire_size: encryptedSize(file.size),
    encryption_iv: toBase64(crypto.getRandomValues(new Uint8Array(SALT_SIZE))),
  }));
}

/** The create's body `files`: names, wire sizes, types and salts. */
export const declaredForServer = (declared: DeclaredFile[]) =>
  declared.map((file) => ({
    name: file.name,
    size: file.wire_size,
    content_type: file.type,
    encryption_iv: file.encryption_iv,
  }));

/** The declared files with the tus resource the server gave each, in the order declared. */
export function withUploadLinks(
  declared: DeclaredFile[],
  links: { file_name: string; resumable_url: string }[],
): UnfinishedFile[] {
  return declared.map((file, index) => {
    const link = links[index];
    if (link?.file_name !== file.name) throw new Error(`the server gave no upload link for ${file.name}`);
    return { ...file, resumable_url: link.resumable_url };
  });
}

/** Whether `chosen` is the file the upload began with, as far as a page can tell (name, size, last change). */
export const sameFile = (chosen: ChosenFile, begun: UnfinishedFile) =>
  chosen.name === begun.name &&
  chosen.file.size === begun.size &&
  chosen.file.lastModified === begun.last_modified;

/** The files chosen again after a reload, in the upload's order; refuses, naming it, one that is not the one begun. */
export function sameFilesAgain(upload: UnfinishedUpload, chosen: ChosenFile[]): File[] {
  return upload.files.map((begun) => {
    const again = chosen.find((candidate) => sameFile(candidate, begun));
    if (!again)
      throw new Error(
        `choose the same file: ${begun.name}, ${formatBytes(begun.size)}, last changed ${formatDate(new Date(begun.last_modified).toISOString())}`,
      );
    return again.file;
  });
}

/**
 * Sends every file of an upload through its tus resource (decisions 7.2) from the server's
 * offset, sealing the records with K as they go; `onStage` hears the wire bytes the server holds
 * of all the files together.
 */
export async function uploadFiles(
  upload: UnfinishedUpload,
  files: File[],
  onStage: (stage: SendStage) => void,
): Promise<void> {
  const contentKey = fromBase64(upload.content_key);
  const total = upload.files.reduce((sum, file) => sum + file.wire_size, 0);
  const held = upload.files.map(() => 0);
  try {
    for (const [index, begun] of upload.files.entries()) {
      await uploadThroughTus({ file: files[index] as File, upload: begun, contentKey }, (bytes) => {
        held[index] = bytes;
        onStage({ stage: "uploading", bytes: held.reduce((sum, b) => sum + b, 0), total });
      });
    }
  } finally {
    contentKey.fill(0);
  }
}
