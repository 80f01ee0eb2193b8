import { ERASED } from "../privacy/personal-data.js";
import { isUuid } from "../queries/agents.js";
import type { AgentWithAccount } from "../queries/connections.js";
import { HttpError } from "./errors.js";

/** Decisions/spec 7: candidates show an address only masked, never in full. */
export function maskEmail(email: string): string {
  if (email === ERASED) return ERASED;
  const [local = "", domain = ""] = email.split("@");
  const dot = domain.lastIndexOf(".");
  const host = dot > 0 ? domain.slice(0, dot) : domain;
  const tld = dot > 0 ? domain.slice(dot) : "";
  return `${local.slice(0, 1)}***@${host.slice(0, 1)}***${tld}`;
}

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

/** 400 AMBIGUOUS_RECIPIENT, with a candidate per account (spec section 7). */
export function ambiguous(ref: string, candidates: AgentWithAccount[]): HttpError {
  return new HttpError(
    400,
    "AMBIGUOUS_RECIPIENT",
    `'${ref}' names agents on several connected accounts; retry naming the account`,
    undefined,
    candidates.map((agent) => ({
      account_id: agent.account_id,
      account_name: agent.account_name,
      email_masked: maskEmail(agent.account_email),
    })),
  );
}
