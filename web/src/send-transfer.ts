import { fromBase64, newContentKey, wrapContentKey } from "@handoff/sdk/crypto";
import { api, errorOf } from "./api.js";
import { type Account, currentSession } from "./session.js";
import { encryptFile, type Spooled } from "./spool.js";

interface Resolved {
  agent_id: string;
  public_key: string;
  key_version: number;
}

export interface Transfer {
  id: string;
  status: string;
  mode: string;
  sender: string;
  recipient: string;
  files: { name: string; size: number; type: string }[];
  total_size: number;
  message: string | null;
  is_encrypted: boolean;
  created_at: string;
  expires_at: string;
  max_downloads: number;
  downloads: number;
  pending_reason?: string | null;
}

export interface SendRequest {
  from: Account;
  agent: string;
  account?: string;
  message?: string;
  expiresIn: string;
  files: File[];
}

export type SendStage =
  | { stage: "encrypting"; file: string; bytes: number; total: number }
  | { stage: "uploading"; bytes: number; total: number };

/**
 * Human-to-agent (decisions 4.6): resolve the agent's key, wrap a fresh content key to it, encrypt
 * each file in the browser (5.3), then one multipart POST on this origin. The server only ever
 * sees ciphertext. A person has no signing key, so the transfer carries no sender signature.
 */
export async function sendToAgent(
  request: SendRequest,
  onStage: (stage: SendStage) => void,
): Promise<Transfer> {
  const query = new URLSearchParams({ agent_id: request.agent });
  if (request.account) query.set("account", request.account);
  const agent = await api<Resolved>(`/v1/agents/resolve?${query}`);
  const contentKey = newContentKey();
  const spooled: Spooled[] = [];
  try {
    const encryptedKey = await wrapContentKey(contentKey, fromBase64(agent.public_key));
    for (const file of request.files) {
      spooled.push(
        await encryptFile(file, contentKey, (bytes) =>
          onStage({ stage: "encrypting", file: file.name, bytes, total: file.size }),
        ),
      );
    }
    contentKey.fill(0);
    const form = new FormData();
    const fields: [string, string | undefined][] = [
      ["mode", "human-to-agent"],
      ["sender", request.from.email],
      ["recipient", request.agent],
      ["recipient_account", request.account],
      ["message", request.message],
      ["expires_in", request.expiresIn],
      ["is_encrypted", "true"],
      ["encrypted_key", encryptedKey],
      ["encryption_algorithm", "AES-256-GCM"],
      ["recipient_key_version", String(agent.key_version)],
    ];
    for (const [name, value] of fields) if (value) form.append(name, value);
    for (const item of spooled) form.append("encryption_iv", item.encryptionIv);
    request.files.forEach((file, index) => {
      const blob = (spooled[index] as Spooled).blob;
      form.append("files", new File([blob], file.name, { type: file.type || "application/octet-stream" }));
    });
    return await upload(form, (bytes, total) => onStage({ stage: "uploading", bytes, total }));
  } finally {
    contentKey.fill(0);
    await Promise.all(spooled.map((item) => item.discard()));
  }
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
