import { describe, it } from "vitest";
import {
  type AgentCommand,
  type AgentContext,
  type AgentEvent,
  type AgentKeys,
  type AgentProfile,
  agentDecider,
  type ConnectionTicket,
} from "../../domain/agent.js";
import { given } from "./given.js";

const REGISTERED_AT = "2026-01-01T00:00:00.000Z";
const BEFORE_EXPIRY = "2026-01-01T00:05:00.000Z";
const EXPIRES_AT = "2026-01-01T00:10:00.000Z";
const AFTER_EXPIRY = "2026-01-01T00:15:00.000Z";
const LATER = "2026-01-02T00:00:00.000Z";

const context: AgentContext = { digestsEqual: (a, b) => a === b };

const profile: AgentProfile = {
  name: "Bot",
  description: "moves files",
  webhookUrl: "https://example.com/hook",
  agentType: "custom",
  metadata: { team: "ops" },
};
const keys: AgentKeys = { publicKey: "pk-1", signingPublicKey: "spk-1" };
const otherKeys: AgentKeys = { publicKey: "pk-2", signingPublicKey: null };
const ticket: ConnectionTicket = { tokenHash: "hash-1", claimCode: "CLAIM-1", expiresAt: EXPIRES_AT };

function register(overrides: { keys: AgentKeys | null; ticket: ConnectionTicket | null }): AgentCommand {
  return {
    type: "RegisterAgent",
    agentId: "agent-1",
    accountId: "acc-1",
    slug: "bot",
    profile,
    keyVersion: 2,
    now: REGISTERED_AT,
    ...overrides,
  };
}

function registered(withTicket: ConnectionTicket | null): AgentEvent {
  return {
    type: "AgentRegistered",
    data: {
      agentId: "agent-1",
      accountId: "acc-1",
      slug: "bot",
      ...profile,
      keyVersion: 2,
      ticket: withTicket,
      registeredAt: REGISTERED_AT,
    },
  };
}

function connected(with_: AgentKeys, at: string): AgentEvent {
  return { type: "AgentConnected", data: { ...with_, keyVersion: 2, connectedAt: at } };
}

const pending = registered(ticket);
const disconnected: AgentEvent = { type: "AgentDisconnected", data: { disconnectedAt: LATER } };

function connect(tokenHash: string, now: string): AgentCommand {
  return { type: "ConnectAgent", tokenHash, keys: otherKeys, now };
}

describe("agent decider", () => {
  describe("RegisterAgent", () => {
    it("one-shot: registers without a ticket and connects at once with the given keys", () => {
      given(agentDecider, [], context)
        .when(register({ keys, ticket: null }))
        .then([registered(null), connected(keys, REGISTERED_AT)]);
    });

    it("one-shot: drops a ticket sent along with the keys", () => {
      given(agentDecider, [], context)
        .when(register({ keys, ticket }))
        .then([registered(null), connected(keys, REGISTERED_AT)]);
    });

    it("two-step: registers a pending agent holding the ticket, without connecting it", () => {
      given(agentDecider, [], context)
        .when(register({ keys: null, ticket }))
        .then([registered(ticket)]);
    });

    it("refuses to register a pending agent twice", () => {
      given(agentDecider, [pending], context)
        .when(register({ keys: null, ticket }))
        .thenRefused("AGENT_ID_TAKEN");
    });

    it("refuses to register a connected agent twice", () => {
      given(agentDecider, [registered(null), connected(keys, REGISTERED_AT)], context)
        .when(register({ keys, ticket: null }))
        .thenRefused("AGENT_ID_TAKEN");
    });

    it("refuses to register a disconnected agent again", () => {
      given(agentDecider, [registered(null), connected(keys, REGISTERED_AT), disconnected], context)
        .when(register({ keys, ticket: null }))
        .thenRefused("AGENT_ID_TAKEN");
    });
  });

  describe("ConnectAgent", () => {
    it("connects a pending agent whose token hash matches before expiry, at the registered key version", () => {
      given(agentDecider, [pending], context)
        .when(connect("hash-1", BEFORE_EXPIRY))
        .then([connected(otherKeys, BEFORE_EXPIRY)]);
    });

    it("refuses a token whose hash does not match", () => {
      given(agentDecider, [pending], context)
        .when(connect("hash-wrong", BEFORE_EXPIRY))
        .thenRefused("UNAUTHORIZED");
    });

    it("refuses a token at its exact expiry time", () => {
      given(agentDecider, [pending], context).when(connect("hash-1", EXPIRES_AT)).thenRefused("UNAUTHORIZED");
    });

    it("refuses a token after its expiry time", () => {
      given(agentDecider, [pending], context)
        .when(connect("hash-1", AFTER_EXPIRY))
        .thenRefused("UNAUTHORIZED");
    });

    it("burns the token: a second connect with the same token is refused", () => {
      given(agentDecider, [pending, connected(otherKeys, BEFORE_EXPIRY)], context)
        .when(connect("hash-1", BEFORE_EXPIRY))
        .thenRefused("UNAUTHORIZED");
    });

    it("refuses to connect an agent registered one-shot (already connected, no ticket)", () => {
      given(agentDecider, [registered(null), connected(keys, REGISTERED_AT)], context)
        .when(connect("hash-1", BEFORE_EXPIRY))
        .thenRefused("UNAUTHORIZED");
    });

    it("refuses to connect a pending agent that was disconnected, even with its valid token", () => {
      given(agentDecider, [pending, disconnected], context)
        .when(connect("hash-1", BEFORE_EXPIRY))
        .thenRefused("UNAUTHORIZED");
    });

    it("refuses to connect a pending agent registered without a ticket", () => {
      given(agentDecider, [registered(null)], context)
        .when(connect("hash-1", BEFORE_EXPIRY))
        .thenRefused("UNAUTHORIZED");
    });

    it("refuses to connect an agent that does not exist, as unauthorized rather than not found", () => {
      given(agentDecider, [], context).when(connect("hash-1", BEFORE_EXPIRY)).thenRefused("UNAUTHORIZED");
    });

    it("compares the token hashes with the context's digestsEqual", () => {
      const alwaysEqual: AgentContext = { digestsEqual: () => true };
      given(agentDecider, [pending], alwaysEqual)
        .when(connect("anything", BEFORE_EXPIRY))
        .then([connected(otherKeys, BEFORE_EXPIRY)]);
    });
  });

  describe("UpdateAgent", () => {
    const changes: Partial<AgentProfile> = { name: "Renamed", metadata: { team: "dev" } };

    it("records the changes for a connected agent of the account", () => {
      given(agentDecider, [registered(null), connected(keys, REGISTERED_AT)], context)
        .when({ type: "UpdateAgent", accountId: "acc-1", changes })
        .then([{ type: "AgentUpdated", data: { changes } }]);
    });

    it("records the changes for a pending agent of the account", () => {
      given(agentDecider, [pending], context)
        .when({ type: "UpdateAgent", accountId: "acc-1", changes: { webhookUrl: null } })
        .then([{ type: "AgentUpdated", data: { changes: { webhookUrl: null } } }]);
    });

    it("records nothing when there are no changes", () => {
      given(agentDecider, [pending], context)
        .when({ type: "UpdateAgent", accountId: "acc-1", changes: {} })
        .then([]);
    });

    it("refuses to update an agent that does not exist", () => {
      given(agentDecider, [], context)
        .when({ type: "UpdateAgent", accountId: "acc-1", changes })
        .thenRefused("NOT_FOUND");
    });

    it("refuses to update another account's agent", () => {
      given(agentDecider, [pending], context)
        .when({ type: "UpdateAgent", accountId: "acc-2", changes })
        .thenRefused("FORBIDDEN");
    });

    it("refuses another account even when the agent is disconnected", () => {
      given(agentDecider, [pending, disconnected], context)
        .when({ type: "UpdateAgent", accountId: "acc-2", changes })
        .thenRefused("FORBIDDEN");
    });

    it("refuses to update a disconnected agent", () => {
      given(agentDecider, [pending, disconnected], context)
        .when({ type: "UpdateAgent", accountId: "acc-1", changes })
        .thenRefused("AGENT_DISCONNECTED");
    });

    it("refuses empty changes on a disconnected agent rather than ignoring them", () => {
      given(agentDecider, [pending, disconnected], context)
        .when({ type: "UpdateAgent", accountId: "acc-1", changes: {} })
        .thenRefused("AGENT_DISCONNECTED");
    });
  });

  describe("DisconnectAgent", () => {
    it("disconnects a connected agent of the account", () => {
      given(agentDecider, [registered(null), connected(keys, REGISTERED_AT)], context)
        .when({ type: "DisconnectAgent", accountId: "acc-1", now: LATER })
        .then([{ type: "AgentDisconnected", data: { disconnectedAt: LATER } }]);
    });

    it("disconnects a pending agent of the account", () => {
      given(agentDecider, [pending], context)
        .when({ type: "DisconnectAgent", accountId: "acc-1", now: LATER })
        .then([{ type: "AgentDisconnected", data: { disconnectedAt: LATER } }]);
    });

    it("records nothing when the agent is already disconnected", () => {
      given(agentDecider, [pending, disconnected], context)
        .when({ type: "DisconnectAgent", accountId: "acc-1", now: LATER })
        .then([]);
    });

    it("refuses to disconnect an agent that does not exist", () => {
      given(agentDecider, [], context)
        .when({ type: "DisconnectAgent", accountId: "acc-1", now: LATER })
        .thenRefused("NOT_FOUND");
    });

    it("refuses to disconnect another account's agent", () => {
      given(agentDecider, [registered(null), connected(keys, REGISTERED_AT)], context)
        .when({ type: "DisconnectAgent", accountId: "acc-2", now: LATER })
        .thenRefused("FORBIDDEN");
    });

    it("refuses another account even when the agent is already disconnected", () => {
      given(agentDecider, [pending, disconnected], context)
        .when({ type: "DisconnectAgent", accountId: "acc-2", now: LATER })
        .thenRefused("FORBIDDEN");
    });
  });
});
