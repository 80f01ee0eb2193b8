import type { Knex } from "knex";
import { z } from "zod";
import type { HumanRecipient, TransferMode, TransferParties } from "../../../domain/transfer.js";
import { validationError } from "../../http/errors.js";
import { ambiguous, resolveAgent } from "../../http/recipients.js";
import type { PersonalData } from "../../privacy/personal-data.js";
import { type AgentRow, findConnectedAgentBySlug } from "../../queries/agents.js";

export interface PartiesInput {
  mode: TransferMode;
  sender: string;
  recipient: string;
  recipientAccount: string | null;
}

export interface ResolvedParties {
  parties: TransferParties;
  /** The human recipient of an agent-to-human transfer. */
  human: HumanRecipient | null;
  senderAgent: AgentRow | null;
  recipientAgent: AgentRow | null;
}

/**
 * Decisions 3.19: an agent sender must be a connected agent of the caller's account; an agent
 * recipient must be resolvable by the caller: its own, or on an actively connected account
 * (`recipient_account` picks one when the slug is on several).
 */
export async function resolveParties(
  db: Knex,
  people: PersonalData,
  accountId: string,
  input: PartiesInput,
): Promise<ResolvedParties> {
  const senderAgent =
    input.mode === "human-to-agent" ? null : await findConnectedAgentBySlug(db, accountId, input.sender);
  if (input.mode !== "human-to-agent" && !senderAgent) {
    throw validationError(`sender '${input.sender}' is not a connected agent of this account`, "sender");
  }
  if (input.mode === "agent-to-human") {
    if (!z.email().safeParse(input.recipient).success) {
      throw validationError("the recipient of an agent-to-human transfer is an e-mail address", "recipient");
    }
    // Human accounts are not built yet: every human recipient is someone without an account.
    // Their address is personal data: sealed under their data key (decisions 6.5).
    const recipientPersonId = await people.personFor(input.recipient);
    return {
      parties: {
        ...common(input, accountId, senderAgent ?? null),
        recipient: await people.seal(recipientPersonId, input.recipient),
        recipientPersonId,
        recipientAccountId: null,
        recipientAgentId: null,
      },
      human: { registered: false, hasReceivingKey: false },
      senderAgent: senderAgent ?? null,
      recipientAgent: null,
    };
  }
  const resolution = await resolveAgent(db, people, accountId, input.recipient, input.recipientAccount);
  if (resolution.kind === "ambiguous") throw ambiguous(input.recipient, resolution.candidates);
  const recipientAgent = resolution.kind === "found" ? resolution.agent : null;
  if (recipientAgent?.connection_status !== "connected") {
    throw validationError(
      `recipient '${input.recipient}' is not an agent this account can send to`,
      "recipient",
    );
  }
  return {
    parties: {
      ...common(input, accountId, senderAgent ?? null),
      recipientPersonId: null,
      recipientAccountId: recipientAgent.account_id,
      recipientAgentId: recipientAgent.id,
    },
    human: null,
    senderAgent: senderAgent ?? null,
    recipientAgent,
  };
}

function common(input: PartiesInput, accountId: string, senderAgent: AgentRow | null) {
  return {
    mode: input.mode,
    sender: input.sender,
    senderAccountId: accountId,
    senderAgentId: senderAgent?.id ?? null,
    recipient: input.recipient,
  };
}
