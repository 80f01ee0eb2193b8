import { randomUUID } from "node:crypto";
import { accountDecider } from "../../domain/account.js";
import { DomainError, refuse } from "../../domain/decider.js";
import { limitsOf } from "../../domain/plans/catalog.js";
import {
  type RequestLink,
  type RequestLinkCommand,
  type RequestLinkTerms,
  refuseOffer,
  requestLinkDecider,
} from "../../domain/request-link.js";
import { streams } from "../../domain/streams.js";
import type { TransferParties } from "../../domain/transfer.js";
import { findRequestLinkByTokenHash, type RequestLinkWithAgent } from "../queries/request-links.js";
import { isTransferId } from "../queries/transfers.js";
import { newRequestToken, requestTokenWellFormed, sha256Hex } from "../security/secrets.js";
import type { CommandDeps } from "./deps.js";
import { handle, type Turn } from "./handle.js";
import { type Actor, load } from "./streams.js";
import { confirmTransfer, type DeclaredFile, recordPresignedTransfer } from "./transfers/presigned.js";
import { loadTransfer, type TransferDeps } from "./transfers/record.js";

/** What the owner asks of a new link, validated at the edge; the plan's defaults fill the rest. */
export interface RequestLinkInput {
  terms: Omit<RequestLinkTerms, "maxTotalSize"> & { maxTotalSize: number | null };
  expiresInSeconds: number | null;
}

/** Transfers that come through a link: downloads allowed, like a presigned transfer's default (decisions 3.3). */
const REQUEST_TRANSFER_DOWNLOADS = 10;

/**
 * Creates a link to `agent`, which must be able to receive encrypted files (a public key); the
 * token is made here and only its digest recorded, so this answer is the only place it appears.
 */
export async function createRequestLink(
  deps: CommandDeps,
  caller: Actor & { accountId: string },
  agent: { id: string; publicKey: string | null },
  input: RequestLinkInput,
) {
  if (!agent.publicKey) {
    throw refuse("INVALID", "this agent has no public_key: files sent to it could not be encrypted", "agent");
  }
  const token = newRequestToken();
  const requestId = randomUUID();
  const decided = await handle(deps, { actor: caller }, async (turn) => {
    const account = await turn.load(accountDecider, streams.account(caller.accountId));
    const command: RequestLinkCommand = {
      type: "CreateRequestLink",
      requestId,
      accountId: caller.accountId,
      agentId: agent.id,
      tokenHash: sha256Hex(token),
      terms: input.terms,
      expiresInSeconds: input.expiresInSeconds,
      now: turn.at(),
    };
    const stream = turn.newStream(requestLinkDecider, streams.requestLink(requestId));
    const events = turn.decide(requestLinkDecider, stream, command, { limits: limitsOf(account.state.plan) });
    return { link: events.reduce(requestLinkDecider.evolve, stream.state) as RequestLink };
  });
  return { ...decided, token };
}

/** Revokes one of the caller's links: it answers 410 REQUEST_CLOSED from now on. */
export function revokeRequestLink(
  deps: CommandDeps,
  caller: Actor & { accountId: string },
  requestId: string,
) {
  return handle(deps, { actor: caller }, async (turn) => {
    const stream = await turn.load(requestLinkDecider, streams.requestLink(requestId));
    turn.decide(
      requestLinkDecider,
      stream,
      { type: "RevokeRequestLink", accountId: caller.accountId, now: turn.at() },
      undefined,
    );
    return {};
  });
}

/**
 * The link a token opens, as the read model shows it (with its agent), or 404 for a token that
 * opens none: a malformed one is refused without a look-up.
 */
export async function linkOfToken(
  deps: Pick<TransferDeps, "db">,
  token: string,
): Promise<RequestLinkWithAgent> {
  const link = requestTokenWellFormed(token)
    ? await findRequestLinkByTokenHash(deps.db, sha256Hex(token))
    : undefined;
  if (!link) throw new DomainError("NOT_FOUND", "no such request link");
  return link;
}

/** Who acts on a link's behalf: the token is a capability, like a signed URL; its owner's account is charged. */
const linkActor = (link: RequestLinkWithAgent): Actor => ({
  kind: "signed_url",
  accountId: link.account_id,
  keyId: null,
});

/** What a person answering a link sends before any byte (decisions 10.2). */
export interface RequestSend {
  files: DeclaredFile[];
  encryptedKey: string;
  recipientKeyVersion: number | null;
  senderName: string | null;
  senderEmail: string | null;
}

/**
 * Records a transfer through a link: the link must be open and take the files (count, total size),
 * the agent's key must be the one the files were encrypted to, and the plan's file size and the
 * owner's quotas hold as for any transfer; all before any byte. The sender's name and address are
 * sealed (decisions 6.5) so that erasure works.
 */
export async function sendToRequest(deps: TransferDeps, token: string, send: RequestSend) {
  const link = await linkOfToken(deps, token);
  const { state } = await load(deps.store, requestLinkDecider, streams.requestLink(link.id));
  const refused = refuseOffer(state, { files: send.files }, deps.clock.now().toISOString());
  if (refused) throw refused;
  if (
    link.agent_connection_status !== "connected" ||
    !link.agent_public_key ||
    link.agent_key_version === null
  ) {
    throw refuse("REQUEST_CLOSED", "the agent this link sends to no longer receives files");
  }
  if (send.recipientKeyVersion !== null && send.recipientKeyVersion !== link.agent_key_version) {
    throw refuse(
      "CONFLICT",
      `the files were encrypted to key version ${send.recipientKeyVersion}; the agent's key is now version ${link.agent_key_version}: read the link again`,
      "recipient_key_version",
    );
  }
  const sender = await sealedSender(deps, send);
  const lifetimeMs = new Date(link.expires_at).getTime() - new Date(link.created_at).getTime();
  const parties: TransferParties = {
    mode: "request",
    sender: sender.name,
    senderPersonId: sender.personId,
    senderEmail: sender.email,
    senderAccountId: link.account_id,
    senderAgentId: null,
    recipient: link.agent_slug,
    recipientPersonId: null,
    recipientAccountId: link.account_id,
    recipientAgentId: link.agent_id,
    requestId: link.id,
  };
  return recordPresignedTransfer(deps, linkActor(link), send.files, (now) => ({
    parties,
    human: null,
    terms: {
      maxDownloads: REQUEST_TRANSFER_DOWNLOADS,
      autoDelete: false,
      isEncrypted: true,
      message: null,
      metadata: {},
      // The agent has as long to fetch the files as the person had to send them.
      expiresAt: new Date(now.getTime() + lifetimeMs).toISOString(),
    },
    encryption: {
      encryptedKey: send.encryptedKey,
      algorithm: "AES-256-GCM",
      senderSignature: null,
      recipientKeyVersion: link.agent_key_version,
      senderPublicKey: null,
      recipientPublicKey: link.agent_public_key,
    },
  }));
}

/**
 * The sender's name and address sealed under a person's key: the person of the address when one was
 * given (an erasure by that address then finds it), else a person of its own. No name: "".
 */
async function sealedSender(deps: CommandDeps, send: RequestSend) {
  const { senderName: name, senderEmail: email } = send;
  if (!email) {
    if (!name) return { name: "", email: null, personId: null };
    const { personId, sealed } = await deps.people.newPerson(name);
    return { name: sealed, email: null, personId };
  }
  const personId = await deps.people.personFor(email);
  return {
    name: name ? await deps.people.seal(personId, name) : "",
    email: await deps.people.seal(personId, email),
    personId,
  };
}

/**
 * Confirms a transfer sent through the link (decisions 10.2): active once every file is stored, and
 * one use of the link counted in the same append; confirming again counts nothing more. A transfer
 * of another link (or none) reads as missing.
 */
export async function confirmRequestTransfer(deps: TransferDeps, token: string, transferId: string) {
  const link = await linkOfToken(deps, token);
  // Checked before anything is decided: a transfer of another link tells nothing of itself.
  const state = isTransferId(transferId) ? (await loadTransfer(deps, transferId)).state : null;
  if (state === null || state.status === "none" || state.record.requestId !== link.id) {
    throw new DomainError("NOT_FOUND", "no such transfer");
  }
  const by = { accountId: link.account_id, agentId: null };
  return confirmTransfer(deps, by, linkActor(link), transferId, (turn) =>
    countUse(turn, link.id, transferId),
  );
}

/** One use of the link, in the same append as the transfer's activation (none if already counted). */
async function countUse(turn: Turn, requestId: string, transferId: string) {
  const stream = await turn.load(requestLinkDecider, streams.requestLink(requestId));
  turn.decide(
    requestLinkDecider,
    stream,
    { type: "RecordRequestUse", transferId, now: turn.at() },
    undefined,
  );
}
