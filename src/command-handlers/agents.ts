import { randomUUID } from "node:crypto";
import { accountDecider } from "../../domain/account.js";
import {
  type AgentKeys,
  type AgentProfile,
  agentDecider,
  type ConnectionTicket,
} from "../../domain/agent.js";
import { DomainError } from "../../domain/decider.js";
import { limitsOf } from "../../domain/plans/catalog.js";
import { streams } from "../../domain/streams.js";
import { NO_STREAM } from "../eventstore/port.js";
import {
  agentIdOfConnectionToken,
  digestsEqual,
  newClaimCode,
  newConnectionToken,
  sha256Hex,
} from "../security/secrets.js";
import type { CommandDeps } from "./deps.js";
import { type Actor, accepted, appendAll, load, retryOnConflict, toAppend } from "./streams.js";

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
  return deps.streamLock.run(streams.account(accountId), () =>
    retryOnConflict(async () => {
      const now = deps.clock.now();
      const agentId = randomUUID();
      const account = await load(deps.store, accountDecider, streams.account(accountId));
      const reserved = accepted(
        accountDecider.decide({ type: "ReserveAgentSlug", agentId, slug: input.slug }, account.state, {
          limits: limitsOf(account.state.plan),
        }),
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
      const registered = accepted(
        agentDecider.decide(
          {
            type: "RegisterAgent",
            agentId,
            accountId,
            slug: input.slug,
            profile: input.profile,
            keyVersion,
            keys: input.keys,
            ticket,
            now: now.toISOString(),
          },
          agentDecider.initialState(),
          { digestsEqual },
        ),
      );
      const stamp = now.toISOString();
      const position = await appendAll(deps.store, [
        toAppend(account, reserved, { ...actor, agentId }, stamp),
        toAppend(
          { streamId: streams.agent(agentId), expected: NO_STREAM },
          registered,
          { ...actor, agentId },
          stamp,
        ),
      ]);
      return { position, agentId, issued };
    }),
  );
}

/** Completes the two-step flow. Any bad, expired or used token is the same 401. */
export async function connectAgent(deps: CommandDeps, token: string, keys: AgentKeys, requestId: string) {
  const agentId = agentIdOfConnectionToken(token);
  if (!agentId)
    throw new DomainError("UNAUTHORIZED", "the connection token is invalid, expired or already used");
  return retryOnConflict(async () => {
    const now = deps.clock.now().toISOString();
    const agent = await load(deps.store, agentDecider, streams.agent(agentId));
    const events = accepted(
      agentDecider.decide({ type: "ConnectAgent", tokenHash: sha256Hex(token), keys, now }, agent.state, {
        digestsEqual,
      }),
    );
    const actor: Actor = {
      kind: "connection_token",
      accountId: agent.state.accountId,
      keyId: null,
      agentId,
      requestId,
    };
    const position = await appendAll(deps.store, [toAppend(agent, events, actor, now)]);
    return { position, agentId, keyVersion: agent.state.keyVersion };
  });
}

export async function updateAgent(
  deps: CommandDeps,
  accountId: string,
  agentId: string,
  changes: Partial<AgentProfile>,
  actor: Actor,
) {
  return retryOnConflict(async () => {
    const now = deps.clock.now().toISOString();
    const agent = await load(deps.store, agentDecider, streams.agent(agentId));
    const events = accepted(
      agentDecider.decide({ type: "UpdateAgent", accountId, changes }, agent.state, { digestsEqual }),
    );
    const position = await appendAll(deps.store, [toAppend(agent, events, { ...actor, agentId }, now)]);
    return { position };
  });
}

/** Disconnects an agent and frees its slug for a re-registration with the next key version. */
export async function disconnectAgent(deps: CommandDeps, accountId: string, agentId: string, actor: Actor) {
  return retryOnConflict(async () => {
    const now = deps.clock.now().toISOString();
    const agent = await load(deps.store, agentDecider, streams.agent(agentId));
    const events = accepted(
      agentDecider.decide({ type: "DisconnectAgent", accountId, now }, agent.state, { digestsEqual }),
    );
    const account = await load(deps.store, accountDecider, streams.account(accountId));
    const released = accepted(
      accountDecider.decide({ type: "ReleaseAgentSlug", agentId }, account.state, {
        limits: limitsOf(account.state.plan),
      }),
    );
    const position = await appendAll(deps.store, [
      toAppend(agent, events, { ...actor, agentId }, now),
      toAppend(account, released, { ...actor, agentId }, now),
    ]);
    return { position };
  });
}

/** Records that an agent was active now (throttled by the decider to once a minute). */
export async function recordSeen(deps: CommandDeps, agentId: string, by: Actor) {
  return retryOnConflict(async () => {
    const now = deps.clock.now().toISOString();
    const agent = await load(deps.store, agentDecider, streams.agent(agentId));
    const events = accepted(agentDecider.decide({ type: "RecordSeen", now }, agent.state, { digestsEqual }));
    const actor: Actor = { ...by, agentId };
    return { position: await appendAll(deps.store, [toAppend(agent, events, actor, now)]) };
  });
}
