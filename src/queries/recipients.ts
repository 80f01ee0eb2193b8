import { isUuid } from "./agents.js";
import type { AgentWithAccount } from "./connections.js";

function matchesAccount(agent: AgentWithAccount, account: string): boolean {
  if (isUuid(account)) return agent.account_id === account.toLowerCase();
  return agent.account_email.toLowerCase() === account.toLowerCase() || agent.account_name === account;
}

export type Resolution =
  | { kind: "found"; agent: AgentWithAccount }
  | { kind: "none" }
  | { kind: "ambiguous"; candidates: AgentWithAccount[] };

/**
 * Picks the agent a caller means by a slug or UUID (spec 4.7, decisions 3.5) among the agents of
 * that name it can see (visibleAgents): its own agent first; else the one agent of that slug on a
 * connected account; several → ambiguous, to be retried with `account` (an e-mail, UUID or
 * display name) naming which.
 */
export function pickAgent(
  visible: AgentWithAccount[],
  callerAccountId: string,
  account: string | null,
): Resolution {
  const candidates = account === null ? visible : visible.filter((agent) => matchesAccount(agent, account));
  const own = candidates.find((agent) => agent.account_id === callerAccountId);
  if (own) return { kind: "found", agent: own };
  const [only, ...more] = candidates;
  if (!only) return { kind: "none" };
  if (more.length === 0) return { kind: "found", agent: only };
  return { kind: "ambiguous", candidates };
}

/**
 * A slug that names agents on several connected accounts (spec section 7): the HTTP edge answers
 * 400 AMBIGUOUS_RECIPIENT with one masked candidate per account.
 */
export class AmbiguousRecipientError extends Error {
  constructor(
    ref: string,
    readonly candidates: AgentWithAccount[],
  ) {
    super(`'${ref}' names agents on several connected accounts; retry naming the account`);
    this.name = "AmbiguousRecipientError";
  }
}
