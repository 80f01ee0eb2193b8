import { setTimeout as sleep } from "node:timers/promises";
import { HandoffError } from "./errors.js";
import type { Transport } from "./http.js";
import type { LogWitness } from "./log-witness.js";
import { filesToSend, linksInOrder, outgoing, type Progress, uploadFiles, wrapFor } from "./send.js";
import type { KeyProof } from "./transparency/index.js";
import type { ConfirmedRequestTransfer, PublicRequest, RequestTransfer } from "./types.js";

export interface RequestSendOptions {
  /** The link's page, `{base}/r/hrq_…`, as its owner handed it out. */
  link: string;
  /** Files, and folders whose regular files go with names relative to the folder's parent (7.3). */
  paths: string[];
  /** What the sender types as their name and e-mail address: shown to the agent as unverified. */
  senderName?: string;
  senderEmail?: string;
  onProgress?: (progress: Progress) => void;
}

const LINK_PATH = /^(.*)\/r\/(hrq_[A-Za-z0-9_-]{32})\/?$/;

/** The service a request link belongs to and its token, from the link's page URL (decisions 10.1). */
export function parseRequestLink(link: string): { baseUrl: string; token: string } {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    throw new HandoffError("INVALID_REQUEST_LINK", `not a request link: ${JSON.stringify(link)}`);
  }
  const match = LINK_PATH.exec(url.pathname);
  if (!match || (url.protocol !== "https:" && url.protocol !== "http:"))
    throw new HandoffError("INVALID_REQUEST_LINK", `not a request link (…/r/hrq_…): ${JSON.stringify(link)}`);
  return { baseUrl: `${url.origin}${match[1]}`, token: match[2] as string };
}

/** A new key's leaf reaches a checkpoint within about a second (decisions 9.2); each read of the link counts against its 10 a minute. */
const KEY_PROOF_ATTEMPTS = 4;
const KEY_PROOF_RETRY_MS = 500;

/** The link's answer, read again for a moment while the log has not yet signed the agent's key. */
async function readLink(transport: Transport, at: string): Promise<PublicRequest> {
  for (let attempt = 1; ; attempt++) {
    const request = await transport.json<PublicRequest>({ method: "GET", url: at, idempotent: true });
    if (request.agent.key_proof !== null || attempt >= KEY_PROOF_ATTEMPTS) return request;
    await sleep(KEY_PROOF_RETRY_MS);
  }
}

/**
 * Answers a request link (decisions 10.2): reads the agent's key from the link and checks it
 * against the transparency log (decisions 9.6: `log` refuses with HandoffCustodyError a key its
 * `key_proof` does not prove, or a checkpoint that forks the ones seen before) before a byte is
 * read or encrypted; then wraps a fresh content key to it, declares the files (their encrypted
 * sizes, each with its salt), streams each file through HOE1 encryption to its upload link, and
 * confirms. Every request to the link goes to its own service with the token alone: no API key
 * goes with it.
 */
export async function sendToRequest(
  transport: Transport,
  options: RequestSendOptions,
  log: LogWitness,
): Promise<ConfirmedRequestTransfer> {
  const { baseUrl, token } = parseRequestLink(options.link);
  const at = `${baseUrl}/v1/requests/by-token/${token}`;
  const request = await readLink(transport, at);
  const { agent } = request;
  await log.requireProvenKeys(agent.agent_id, agent, agent.key_proof as KeyProof | null);
  const files = await filesToSend(options.paths);
  const { contentKey, encryptedKey, salts } = await wrapFor(request.agent.public_key, files.length);
  const out = files.map((file, index) =>
    outgoing(file, { contentKey, salt: salts[index] as Uint8Array }, options.onProgress),
  );
  const created = await transport.json<RequestTransfer>({
    method: "POST",
    url: `${at}/transfers`,
    idempotent: false,
    json: {
      files: out.map((file) => ({
        name: file.name,
        size: file.wireSize,
        content_type: file.type,
        // Every file here is sealed, so each has its salt.
        encryption_iv: file.encryptionIv as string,
      })),
      encrypted_key: encryptedKey,
      recipient_key_version: request.agent.key_version,
      ...(options.senderName ? { sender_name: options.senderName } : {}),
      ...(options.senderEmail ? { sender_email: options.senderEmail } : {}),
    },
  });
  await uploadFiles(transport, out, linksInOrder(out, created.upload_urls));
  return transport.json<ConfirmedRequestTransfer>({
    method: "POST",
    url: `${at}/transfers/${encodeURIComponent(created.transfer_id)}/confirm`,
    idempotent: true,
  });
}
