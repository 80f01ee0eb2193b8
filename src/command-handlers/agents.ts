import { randomUUID } from "node:crypto";
import {
  type AgentKeys,
  type AgentProfile,
  agentDecider,
  type ConnectionTicket,
} from "../../domain/agent.js";
import { DomainError } from "../../domain/decider.js";
import { streams } from "../../domain/streams.js";
import {
  agentIdOfConnectionToken,
  digestsEqual,
  newClaimCode,
  newConnectionToken,
  sha256Hex,
} from "../security/secrets.js";
import { decideOnAccount } from "./account-stream.js";
import type { CommandDeps } from "./deps.js";
import { handle } from "./handle.js";
import type { Actor } from "./streams.js";

const CONNECTION_TOKEN_TTL_MS = 60 * 60 * 1000;

export interface AgentRegistration {
  slug: string;
  profile: AgentProfile;
  keys: AgentKeys | null;
}

/** Only returned once, to the caller of the two-step registration. */
export interface IssuedConnectionToken {
  connectionToken: string;
  claimCode: string;
  tokenExpiresAt: string;
}

/**
 * Registers an agent: the slug is reserved on the account stream (unique, within the plan's agent
 * limit, next key version) in the same atomic append that creates the agent's own stream.
 */
export async function registerAgent(
  deps: CommandDeps,
  accountId: string,
  input: AgentRegistration,
  actor: Actor,
) {
  return handle(deps, { lock: streams.account(accountId) }, async (turn) => {
    const now = turn.now();
    const agentId = randomUUID();
    const by = { ...actor, agentId };
    const reserved = await decideOnAccount(
      turn,
      accountId,
      { type: "ReserveAgentSlug", agentId, slug: input.slug },
      by,
    );
    const keyVersion = reserved.find((e) => e.type === "AgentSlugReserved")?.data.keyVersion ?? 1;

    let issued: IssuedConnectionToken | null = null;
    let ticket: ConnectionTicket | null = null;
    if (!input.keys) {
      const connectionToken = newConnectionToken(agentId);
      const tokenExpiresAt = new Date(now.getTime() + CONNECTION_TOKEN_TTL_MS).toISOString();
      issued = { connectionToken, claimCode: newClaimCode(), tokenExpiresAt };
      ticket = {
        tokenHash: sha256Hex(connectionToken),
        claimCode: issued.claimCode,
        expiresAt: tokenExpiresAt,
      };
    }
    turn.decide(
      agentDecider,
      turn.newStream(agentDecider, streams.agent(agentId)),
      {
        type: "RegisterAgent",
        agentId,
        accountId,
        slug: input.slug,
        profile: input.profile,
        keyVersion,
        keys: input.keys,
        ticket,
        now: turn.at(),
      },
      { digestsEqual },
      by,
    );
    return { agentId, issued };
  });
}

/** Completes the two-step flow. Any bad, expired or used token is the same 401. */
export async function connectAgent(deps: CommandDeps, token: string, keys: AgentKeys, requestId: string) {
  const agentId = agentIdOfConnectionToken(token);
  if (!agentId)
    throw new DomainError("UNAUTHORIZED", "the connection token is invalid, expired or already used");
  return handle(deps, {}, async (turn) => {
    const agent = await turn.load(agentDecider, streams.agent(agentId));
    const actor: Actor = {
      kind: "connection_token",
      accountId: agent.state.accountId,
      keyId: null,
      agentId,
      requestId,
    };
    turn.decide(
      agentDecider,
      agent,
      { type: "ConnectAgent", tokenHash: sha256Hex(token), keys, now: turn.at() },
      { digestsEqual },
      actor,
    );
    return { agentId, keyVersion: agent.state.keyVersion };
  });
}

export async function updateAgent(
  deps: CommandDeps,
  accountId: string,
  agentId: string,
  changes: Partial<AgentProfile>,
  actor: Actor,
) {
  return handle(deps, { actor: { ...actor, agentId } }, async (turn) => {
    const agent = await turn.load(agentDecider, streams.agent(agentId));
    turn.decide(agentDecider, agent, { type: "UpdateAgent", accountId, changes }, { digestsEqual });
    return {};
  });
}

/** Disconnects an agent and frees its slug for a re-registration with the next key version. */
export async function disconnectAgent(deps: CommandDeps, accountId: string, agentId: string, actor: Actor) {
  return handle(deps, { actor: { ...actor, agentId } }, async (turn) => {
    const agent = await turn.load(agentDecider, streams.agent(agentId));
    turn.decide(
      agentDecider,
      agent,
      { type: "DisconnectAgent", accountId, now: turn.at() },
      { digestsEqual },
    );
    await decideOnAccount(turn, accountId, { type: "ReleaseAgentSlug", agentId });
    return {};
  });
}

/** Records that an agent was active now (throttled by the decider to once a minute). */
export async function recordSeen(deps: CommandDeps, agentId: string, by: Actor) {
  return handle(deps, { actor: { ...by, agentId } }, async (turn) => {
    const agent = await turn.load(agentDecider, streams.agent(agentId));
    turn.decide(agentDecider, agent, { type: "RecordSeen", now: turn.at() }, { digestsEqual });
    return {};
  });
}
