import { encryptedSize, fromBase64, newContentKey, toBase64, wrapContentKey } from "@handoff/sdk/crypto";
import type { Account, ExpiresIn, PresignedAnswer, Transfer, TransferFields } from "@handoff/sdk/types";
import { RESUMABLE_FROM } from "@handoff/sdk/upload-rules";
import { api, errorOf } from "./api.js";
import { provenAgent } from "./key-transparency.js";
import {
  byOwnName,
  type ChosenFile,
  declaredForServer,
  declareFiles,
  type SendStage,
  sameFilesAgain,
  uploadFiles,
  withUploadLinks,
} from "./resumable-send.js";
import { currentSession } from "./session.js";
import { encryptFile, type Spooled } from "./spool.js";
import { forgetUpload, rememberUpload, type UnfinishedUpload } from "./unfinished-uploads.js";

export interface SendRequest {
  from: Account;
  agent: string;
  account?: string;
  message?: string;
  expiresIn: ExpiresIn;
  files: File[];
}

export type { SendStage };

/**
 * Human-to-agent (decisions 4.6): resolve the agent's key (proven by the transparency log, 9.6), wrap a fresh content key to it, encrypt
 * each file in the browser (5.3) and upload it: one multipart POST, or from RESUMABLE_FROM bytes
 * on the wire a presigned transfer sent through tus (7.2). The server only ever sees ciphertext.
 * A person has no signing key, so the transfer carries no sender signature.
 */
export async function sendToAgent(
  request: SendRequest,
  onStage: (stage: SendStage) => void,
): Promise<Transfer> {
  const query = new URLSearchParams({ agent_id: request.agent });
  if (request.account) query.set("account", request.account);
  const agent = await provenAgent(query);
  if (agent.public_key === null || agent.key_version === null)
    throw new Error(
      `${agent.agent_id} has no key to encrypt to yet (its connection is ${agent.connection_status})`,
    );
  const contentKey = newContentKey();
  try {
    const fields: TransferFields = {
      mode: "human-to-agent",
      sender: request.from.email,
      recipient: request.agent,
      recipient_account: request.account,
      message: request.message,
      expires_in: request.expiresIn,
      is_encrypted: true,
      encrypted_key: await wrapContentKey(contentKey, fromBase64(agent.public_key)),
      encryption_algorithm: "AES-256-GCM",
      recipient_key_version: agent.key_version,
    };
    const wire = request.files.reduce((sum, file) => sum + encryptedSize(file.size), 0);
    if (wire >= RESUMABLE_FROM)
      return await sendResumable(request.from.id, fields, request.files, contentKey, onStage);
    return await sendMultipart(fields, request.files, contentKey, onStage);
  } finally {
    contentKey.fill(0);
  }
}

/**
 * Below RESUMABLE_FROM: each file encrypted into a spool first (5.3), then one multipart POST on
 * this origin.
 */
async function sendMultipart(
  fields: TransferFields,
  files: File[],
  contentKey: Uint8Array,
  onStage: (stage: SendStage) => void,
): Promise<Transfer> {
  const spooled: Spooled[] = [];
  try {
    for (const file of files) {
      spooled.push(
        await encryptFile(file, contentKey, (bytes) =>
          onStage({ stage: "encrypting", file: file.name, bytes, total: file.size }),
        ),
      );
    }
    contentKey.fill(0);
    const form = new FormData();
    for (const [name, value] of Object.entries(fields))
      if (value !== undefined) form.append(name, String(value));
    for (const item of spooled) form.append("encryption_iv", item.encryptionIv);
    files.forEach((file, index) => {
      const blob = (spooled[index] as Spooled).blob;
      form.append("files", new File([blob], file.name, { type: file.type || "application/octet-stream" }));
    });
    return await upload(form, (bytes, total) => onStage({ stage: "uploading", bytes, total }));
  } finally {
    await Promise.all(spooled.map((item) => item.discard()));
  }
}

/**
 * From RESUMABLE_FROM on the wire (decisions 7.2): a presigned transfer whose files go through
 * their tus resources, encrypted as they are sent. What resuming takes is remembered before the
 * first byte, so after a reload the person can go on from the server's offset (resumeUpload).
 */
async function sendResumable(
  accountId: string,
  fields: TransferFields,
  files: File[],
  contentKey: Uint8Array,
  onStage: (stage: SendStage) => void,
): Promise<Transfer> {
  const declared = declareFiles(byOwnName(files));
  const created = await api<PresignedAnswer>("/v1/transfers/presigned", {
    method: "POST",
    json: { ...fields, files: declaredForServer(declared) },
  });
  const upload: UnfinishedUpload = {
    transfer_id: created.id,
    recipient: fields.recipient,
    expires_at: created.expires_at,
    content_key: toBase64(contentKey),
    files: withUploadLinks(declared, created.upload_urls),
  };
  rememberUpload(accountId, upload);
  return finishUpload(accountId, upload, files, onStage);
}

/**
 * Goes on with an upload begun before a reload, given the files the person chose again: each must
 * be the one begun (name, size, last change). A transfer confirmed meanwhile is only forgotten.
 */
export async function resumeUpload(
  accountId: string,
  upload: UnfinishedUpload,
  chosen: ChosenFile[],
  onStage: (stage: SendStage) => void,
): Promise<Transfer> {
  const files = sameFilesAgain(upload, chosen);
  const transfer = await api<Transfer>(`/v1/transfers/${encodeURIComponent(upload.transfer_id)}`);
  if (transfer.status !== "pending") {
    forgetUpload(accountId, upload.transfer_id);
    if (transfer.status === "active") return transfer;
    throw new Error(`this upload can no longer be finished: the transfer is ${transfer.status}`);
  }
  return finishUpload(accountId, upload, files, onStage);
}

/** Sends every file from the server's offset, confirms the transfer, and forgets the upload. */
async function finishUpload(
  accountId: string,
  upload: UnfinishedUpload,
  files: File[],
  onStage: (stage: SendStage) => void,
): Promise<Transfer> {
  await uploadFiles(upload, files, onStage);
  const transfer = await api<Transfer>(`/v1/transfers/${encodeURIComponent(upload.transfer_id)}/confirm`, {
    method: "POST",
  });
  forgetUpload(accountId, upload.transfer_id);
  return transfer;
}

/** XMLHttpRequest, because fetch reports no upload progress; the body streams from the spooled files. */
function upload(form: FormData, onProgress: (bytes: number, total: number) => void): Promise<Transfer> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/v1/transfers");
    const session = currentSession();
    if (session) xhr.setRequestHeader("authorization", `Bearer ${session.token}`);
    xhr.setRequestHeader("idempotency-key", crypto.randomUUID());
    xhr.upload.onprogress = (event) => onProgress(event.loaded, event.total);
    xhr.onerror = () => reject(new Error("the upload failed: the server could not be reached"));
    xhr.onload = async () => {
      const response = new Response(xhr.responseText, { status: xhr.status });
      if (xhr.status >= 200 && xhr.status < 300) resolve((await response.json()) as Transfer);
      else reject(await errorOf(response));
    };
    xhr.send(form);
  });
}
