import { encryptedSize, fromBase64, newContentKey, toBase64, wrapContentKey } from "@handoff/sdk/crypto";
import { fileNameProblem } from "@handoff/sdk/file-names";
import type { ConfirmedRequestTransfer, PublicRequest, RequestTransfer } from "@handoff/sdk/types";
import { api } from "./api.js";
import { formatBytes } from "./format.js";
import {
  type ChosenFile,
  declaredForServer,
  declareFiles,
  type SendStage,
  sameFilesAgain,
  uploadFiles,
  withUploadLinks,
} from "./resumable-send.js";
import { forgetUpload, rememberUpload, type UnfinishedUpload } from "./unfinished-uploads.js";

/** The by-token endpoints of a request link (decisions 10.2): the token is the only credential. */
export const requestPath = (token: string) => `/v1/requests/by-token/${encodeURIComponent(token)}`;

/** Whose unfinished uploads these are: the link's, since the person answering it has no account. */
export const linkOwner = (token: string) => `request-link:${token}`;

/** The link as its page shows it: title, message, the agent and its key, the limits. */
export const readRequest = (token: string) => api<PublicRequest>(requestPath(token), { anonymous: true });

/** How the agent is named to the person: its name, else its id. */
export const agentLabel = (request: PublicRequest) => request.agent.name ?? request.agent.agent_id;

export interface Answer {
  files: ChosenFile[];
  senderName?: string;
  senderEmail?: string;
}

/**
 * What the link refuses, checked in the page before anything is encrypted or sent (the server
 * checks the same before any byte): no file, more files than it takes, more bytes on the wire
 * than it takes (HOE1's, as `max_total_size` counts them), a name that breaks decisions 7.3.
 */
export function refusal(request: PublicRequest, files: ChosenFile[]): string | null {
  if (files.length === 0) return "Choose at least one file, or a folder.";
  if (files.length > request.max_files)
    return `This link takes at most ${request.max_files} ${request.max_files === 1 ? "file" : "files"}; you chose ${files.length}.`;
  const wire = files.reduce((sum, { file }) => sum + encryptedSize(file.size), 0);
  if (wire > request.max_total_size)
    return `This link takes at most ${formatBytes(request.max_total_size)} in all (encrypted); these files come to ${formatBytes(wire)}.`;
  for (const { name } of files) {
    const problem = fileNameProblem(name);
    if (problem) return `${JSON.stringify(name)} cannot be sent: ${problem}.`;
  }
  return null;
}

/**
 * Answers a request link from the browser (decisions 10.2, 10.4): wraps a fresh content key to the
 * agent's key as the link shows it, declares the files (wire sizes and salts), remembers what
 * resuming takes before the first byte, sends each file through its tus resource encrypted as it
 * goes (7.2), and confirms. The server only ever sees ciphertext.
 */
export async function answerRequest(
  token: string,
  request: PublicRequest,
  answer: Answer,
  onStage: (stage: SendStage) => void,
): Promise<ConfirmedRequestTransfer> {
  const refused = refusal(request, answer.files);
  if (refused) throw new Error(refused);
  const contentKey = newContentKey();
  try {
    const declared = declareFiles(answer.files);
    const created = await api<RequestTransfer>(`${requestPath(token)}/transfers`, {
      method: "POST",
      anonymous: true,
      json: {
        files: declaredForServer(declared),
        encrypted_key: await wrapContentKey(contentKey, fromBase64(request.agent.public_key)),
        recipient_key_version: request.agent.key_version,
        ...(answer.senderName ? { sender_name: answer.senderName } : {}),
        ...(answer.senderEmail ? { sender_email: answer.senderEmail } : {}),
      },
    });
    const upload: UnfinishedUpload = {
      transfer_id: created.transfer_id,
      recipient: agentLabel(request),
      // The transfer's links live as long as the link does (docs/requests.md).
      expires_at: request.expires_at,
      content_key: toBase64(contentKey),
      files: withUploadLinks(declared, created.upload_urls),
    };
    rememberUpload(linkOwner(token), upload);
    return await finishAnswer(
      token,
      upload,
      answer.files.map(({ file }) => file),
      onStage,
    );
  } finally {
    contentKey.fill(0);
  }
}

/** Goes on with an answer a reload interrupted, once the person chose the same files again. */
export function resumeAnswer(
  token: string,
  upload: UnfinishedUpload,
  chosen: ChosenFile[],
  onStage: (stage: SendStage) => void,
): Promise<ConfirmedRequestTransfer> {
  return finishAnswer(token, upload, sameFilesAgain(upload, chosen), onStage);
}

/**
 * Sends every file from the server's offset and confirms. Confirming again answers the same
 * (a reload between the confirm and forgetting the upload only confirms once more).
 */
async function finishAnswer(
  token: string,
  upload: UnfinishedUpload,
  files: File[],
  onStage: (stage: SendStage) => void,
): Promise<ConfirmedRequestTransfer> {
  await uploadFiles(upload, files, onStage);
  // The confirm_url of the create's answer: decisions 10.2 fixes it from the token and the transfer.
  const confirmed = await api<ConfirmedRequestTransfer>(
    `${requestPath(token)}/transfers/${encodeURIComponent(upload.transfer_id)}/confirm`,
    { method: "POST", anonymous: true },
  );
  forgetUpload(linkOwner(token), upload.transfer_id);
  return confirmed;
}

/** Throws away an answer a reload interrupted: each file's tus upload is terminated (7.1), then forgotten. */
export async function discardAnswer(token: string, upload: UnfinishedUpload): Promise<void> {
  await Promise.all(
    upload.files.map((file) =>
      // An upload already gone (expired, confirmed) answers 404: nothing is left to delete.
      fetch(file.resumable_url, { method: "DELETE", headers: { "tus-resumable": "1.0.0" } }).catch(() => {}),
    ),
  );
  forgetUpload(linkOwner(token), upload.transfer_id);
}
