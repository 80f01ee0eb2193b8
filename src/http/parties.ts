import type { Knex } from "knex";
import type { TransferMode, TransferParties } from "../../domain/transfer.js";
import { type AgentRow, findConnectedAgentBySlug } from "../queries/agents.js";
import { validationError } from "./errors.js";

export interface PartiesInput {
  mode: TransferMode;
  sender: string;
  recipient: string;
  recipientAccount: string | null;
}

export interface ResolvedParties {
  parties: TransferParties;
  senderAgent: AgentRow | null;
  recipientAgent: AgentRow | null;
}

/**
 * Decisions 3.19: an agent sender must be a connected agent of the caller's account; an agent
 * recipient must be resolvable by the caller. Agents resolve on the caller's own account.
 */
export async function resolveParties(
  db: Knex,
  accountId: string,
  input: PartiesInput,
): Promise<ResolvedParties> {
  const senderAgent =
    input.mode === "human-to-agent" ? null : await findConnectedAgentBySlug(db, accountId, input.sender);
  if (input.mode !== "human-to-agent" && !senderAgent) {
    throw validationError(`sender '${input.sender}' is not a connected agent of this account`, "sender");
  }
  if (input.mode === "agent-to-human") {
    throw validationError(
      "agent-to-human transfers need human accounts, which this server does not offer yet",
      "mode",
    );
  }
  const recipientAgent = await findConnectedAgentBySlug(db, accountId, input.recipient);
  if (!recipientAgent) {
    throw validationError(
      `recipient '${input.recipient}' is not an agent this account can send to`,
      "recipient",
    );
  }
  return {
    parties: {
      mode: input.mode,
      sender: input.sender,
      senderAccountId: accountId,
      senderAgentId: senderAgent?.id ?? null,
      recipient: input.recipient,
      recipientAccountId: recipientAgent.account_id,
      recipientAgentId: recipientAgent.id,
    },
    senderAgent: senderAgent ?? null,
    recipientAgent,
  };
}
