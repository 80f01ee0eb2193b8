import type { Knex } from "knex";
import { z } from "zod";
import { refuse } from "../../../domain/decider.js";
import type { HumanRecipient, TransferMode, TransferParties } from "../../../domain/transfer.js";
import type { PersonalData } from "../../privacy/personal-data.js";
import type { AgentRow } from "../../queries/agents.js";
import { visibleAgents } from "../../queries/connections.js";
import { findPersonByEmail, type PersonRow, verifiedPersonEmail } from "../../queries/humans.js";
import { AmbiguousRecipientError, pickAgent } from "../../queries/recipients.js";
import type { HotLookups } from "../../read-models/hot-rows.js";

export interface PartiesInput {
  mode: TransferMode;
  sender: string;
  recipient: string;
  recipientAccount: string | null;
}

/** The person an agent-to-human transfer goes to, with their receiving key once they have one. */
export interface PersonRecipient extends HumanRecipient {
  account: PersonRow | null;
}

export interface ResolvedParties {
  parties: TransferParties;
  /** The human recipient of an agent-to-human transfer. */
  human: PersonRecipient | null;
  senderAgent: AgentRow | null;
  recipientAgent: AgentRow | null;
}

/**
 * Decisions 3.19: an agent sender must be a connected agent of the caller's account; an agent
 * recipient must be resolvable by the caller: its own, or on an actively connected account
 * (`recipient_account` picks one when the slug is on several). Decisions 4.5–4.6: an e-mail
 * recipient is a person, active once they have a receiving key; a person's account sends
 * human-to-agent as its own address, to connected accounts' agents or those of accounts that
 * have sent to it.
 */
export async function resolveParties(
  {
    db,
    people,
    hot,
    readModelsCaughtUp,
  }: { db: Knex; people: PersonalData; hot: HotLookups; readModelsCaughtUp(): Promise<unknown> },
  accountId: string,
  input: PartiesInput,
): Promise<ResolvedParties> {
  // A send is answered without waiting for the read models (readsModels: false); an agent's
  // parties come from the hot look-ups, which follow them. A person's side reads the read models
  // themselves (who they are, who sent to them): those must first show what was committed before.
  if (input.mode !== "agent-to-agent") await readModelsCaughtUp();
  const senderAgent =
    input.mode === "human-to-agent" ? null : await hot.connectedAgent(accountId, input.sender);
  if (input.mode !== "human-to-agent" && !senderAgent) {
    throw refuse("INVALID", `sender '${input.sender}' is not a connected agent of this account`, "sender");
  }
  if (input.mode === "agent-to-human") {
    if (!z.email().safeParse(input.recipient).success) {
      throw refuse(
        "INVALID",
        "the recipient of an agent-to-human transfer is an e-mail address",
        "recipient",
      );
    }
    const person = (await findPersonByEmail(db, people, input.recipient)) ?? null;
    const hasReceivingKey = person?.email_verified === true && person.receiving_key !== null;
    // The address is personal data: sealed under its person's data key (decisions 6.5).
    const recipientPersonId = await people.personFor(input.recipient);
    return {
      parties: {
        ...common(input, accountId, senderAgent ?? null),
        recipient: await people.seal(recipientPersonId, input.recipient),
        recipientPersonId,
        // A person's account is the recipient side once it can open what it gets; until then
        // the transfer is held for the address.
        recipientAccountId: hasReceivingKey && person ? person.account_id : null,
        recipientAgentId: null,
      },
      human: { registered: person !== null, hasReceivingKey, account: person },
      senderAgent: senderAgent ?? null,
      recipientAgent: null,
    };
  }
  const personEmail =
    input.mode === "human-to-agent" ? await verifiedPersonEmail(db, people, accountId) : null;
  if (personEmail !== null && personEmail.toLowerCase() !== input.sender.toLowerCase()) {
    throw refuse("INVALID", `a person sends as their own address: sender must be '${personEmail}'`, "sender");
  }
  const visible =
    personEmail === null
      ? await hot.visibleAgents(accountId, input.recipient)
      : await visibleAgents(db, people, accountId, input.recipient, personEmail);
  const resolution = pickAgent(visible, accountId, input.recipientAccount);
  if (resolution.kind === "ambiguous")
    throw new AmbiguousRecipientError(input.recipient, resolution.candidates);
  const recipientAgent = resolution.kind === "found" ? resolution.agent : null;
  if (recipientAgent?.connection_status !== "connected") {
    throw refuse(
      "INVALID",
      `recipient '${input.recipient}' is not an agent this account can send to`,
      "recipient",
    );
  }
  // A person sending is named by their address: sealed under their data key (decisions 6.5).
  const senderPersonId = personEmail === null ? null : await people.personFor(personEmail);
  return {
    parties: {
      ...common(input, accountId, senderAgent ?? null),
      ...(senderPersonId ? { sender: await people.seal(senderPersonId, input.sender), senderPersonId } : {}),
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
    senderPersonId: null,
    senderAccountId: accountId,
    senderAgentId: senderAgent?.id ?? null,
    recipient: input.recipient,
  };
}
