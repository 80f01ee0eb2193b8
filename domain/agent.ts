import { type Decider, type Decision, refuse, unreachable } from "./decider.js";
import type { WebhookStatus } from "./webhook.js";

export const AGENT_TYPES = ["custom", "langchain", "crewai", "autogen", "mastra", "n8n"] as const;
export type AgentType = (typeof AGENT_TYPES)[number];

export interface AgentProfile {
  name: string | null;
  description: string | null;
  webhookUrl: string | null;
  agentType: AgentType;
  metadata: Record<string, unknown>;
}

export interface AgentKeys {
  publicKey: string;
  signingPublicKey: string | null;
}

/** A pending agent's one-time connection token; only its hash is ever recorded. */
export interface ConnectionTicket {
  tokenHash: string;
  claimCode: string;
  expiresAt: string;
}

export type AgentEvent =
  | {
      type: "AgentRegistered";
      data: AgentProfile & {
        agentId: string;
        accountId: string;
        slug: string;
        keyVersion: number;
        ticket: ConnectionTicket | null;
        registeredAt: string;
      };
    }
  | { type: "AgentConnected"; data: AgentKeys & { keyVersion: number; connectedAt: string } }
  | { type: "AgentUpdated"; data: { changes: Partial<AgentProfile> } }
  | { type: "AgentDisconnected"; data: { disconnectedAt: string } }
  | { type: "AgentSeen"; data: { at: string } }
  /**
   * A new webhook secret; the old one signs too until `previousValidUntil`. Never the secret
   * itself: `rotationId` names the secret staged for it (absent from rotations before issue 23).
   */
  | {
      type: "WebhookSecretRotated";
      data: { rotatedAt: string; previousValidUntil: string; rotationId?: string };
    }
  | { type: "WebhookTestRequested"; data: { messageId: string; requestedAt: string } }
  /** Decisions 8.3: messages failed for 3 days in a row; a PATCH with a webhook_url enables it again. */
  | { type: "WebhookDisabled"; data: { at: string; failingSince: string } };

export type AgentCommand =
  | {
      type: "RegisterAgent";
      agentId: string;
      accountId: string;
      slug: string;
      profile: AgentProfile;
      keyVersion: number;
      /** Present for the one-shot flow: the agent is connected at once. */
      keys: AgentKeys | null;
      /** Present for the two-step flow. */
      ticket: ConnectionTicket | null;
      now: string;
    }
  | { type: "ConnectAgent"; tokenHash: string; keys: AgentKeys; now: string }
  | { type: "UpdateAgent"; accountId: string; changes: Partial<AgentProfile> }
  | { type: "DisconnectAgent"; accountId: string; now: string }
  | { type: "RecordSeen"; now: string }
  | {
      type: "RotateWebhookSecret";
      accountId: string;
      now: string;
      previousValidUntil: string;
      rotationId: string;
    }
  | { type: "RequestWebhookTest"; accountId: string; messageId: string; now: string }
  | { type: "DisableWebhook"; now: string; failingSince: string };

export type AgentStatus = "pending" | "connected" | "disconnected";

export interface AgentState {
  exists: boolean;
  accountId: string;
  status: AgentStatus;
  keyVersion: number;
  ticket: ConnectionTicket | null;
  lastSeenAt: string | null;
  /** null while no webhook_url is set. */
  webhook: WebhookStatus | null;
}

/** `last_seen_at` moves at most once a minute: activity, not an event per request. */
const SEEN_RESOLUTION_MS = 60_000;

/** Compares two hex digests in time independent of where they differ. */
export type DigestsEqual = (a: string, b: string) => boolean;

export interface AgentContext {
  digestsEqual: DigestsEqual;
}

function decide(command: AgentCommand, state: AgentState, context: AgentContext): Decision<AgentEvent> {
  switch (command.type) {
    case "RegisterAgent": {
      if (state.exists) return refuse("AGENT_ID_TAKEN", "this agent is already registered");
      const { agentId, accountId, slug, profile, keyVersion, keys, ticket, now } = command;
      const registered: AgentEvent = {
        type: "AgentRegistered",
        data: {
          agentId,
          accountId,
          slug,
          ...profile,
          keyVersion,
          ticket: keys ? null : ticket,
          registeredAt: now,
        },
      };
      if (!keys) return [registered];
      return [registered, { type: "AgentConnected", data: { ...keys, keyVersion, connectedAt: now } }];
    }
    case "ConnectAgent": {
      const ticket = state.ticket;
      const valid =
        state.exists &&
        state.status === "pending" &&
        ticket !== null &&
        context.digestsEqual(ticket.tokenHash, command.tokenHash) &&
        Date.parse(command.now) < Date.parse(ticket.expiresAt);
      if (!valid) return refuse("UNAUTHORIZED", "the connection token is invalid, expired or already used");
      return [
        {
          type: "AgentConnected",
          data: { ...command.keys, keyVersion: state.keyVersion, connectedAt: command.now },
        },
      ];
    }
    case "UpdateAgent": {
      const refusal = ownedAndActive(state, command.accountId);
      if (refusal) return refusal;
      if (Object.keys(command.changes).length === 0) return [];
      return [{ type: "AgentUpdated", data: { changes: command.changes } }];
    }
    case "DisconnectAgent": {
      if (!state.exists) return refuse("NOT_FOUND", "no such agent");
      if (state.accountId !== command.accountId)
        return refuse("FORBIDDEN", "this agent belongs to another account");
      if (state.status === "disconnected") return [];
      return [{ type: "AgentDisconnected", data: { disconnectedAt: command.now } }];
    }
    case "RecordSeen": {
      if (!state.exists || state.status !== "connected") return [];
      const last = state.lastSeenAt === null ? null : Date.parse(state.lastSeenAt);
      if (last !== null && Date.parse(command.now) - last < SEEN_RESOLUTION_MS) return [];
      return [{ type: "AgentSeen", data: { at: command.now } }];
    }
    case "RotateWebhookSecret": {
      const refusal = ownWebhook(state, command.accountId);
      if (refusal) return refusal;
      const { now, previousValidUntil, rotationId } = command;
      return [{ type: "WebhookSecretRotated", data: { rotatedAt: now, previousValidUntil, rotationId } }];
    }
    case "RequestWebhookTest": {
      const refusal = ownWebhook(state, command.accountId);
      if (refusal) return refusal;
      if (state.webhook === "disabled")
        return refuse("CONFLICT", "this agent's webhook is disabled: set its webhook_url again to enable it");
      return [
        { type: "WebhookTestRequested", data: { messageId: command.messageId, requestedAt: command.now } },
      ];
    }
    case "DisableWebhook":
      if (state.webhook !== "active") return [];
      return [{ type: "WebhookDisabled", data: { at: command.now, failingSince: command.failingSince } }];
    default:
      return unreachable(command);
  }
}

/** Decisions 8.1: another account's agent is not found, and a webhook needs its URL first. */
function ownWebhook(state: AgentState, accountId: string) {
  if (!state.exists || state.accountId !== accountId) return refuse("NOT_FOUND", "no such agent");
  if (state.webhook === null) return refuse("CONFLICT", "this agent has no webhook_url");
  return null;
}

/** The webhook status a profile change leaves: a URL set (again) enables it, null removes it. */
function webhookAfter(state: AgentState, changes: Partial<AgentProfile>): WebhookStatus | null {
  if (!("webhookUrl" in changes)) return state.webhook;
  return changes.webhookUrl ? "active" : null;
}

function ownedAndActive(state: AgentState, accountId: string) {
  if (!state.exists) return refuse("NOT_FOUND", "no such agent");
  if (state.accountId !== accountId) return refuse("FORBIDDEN", "this agent belongs to another account");
  if (state.status === "disconnected") return refuse("AGENT_DISCONNECTED", "this agent is disconnected");
  return null;
}

function evolve(state: AgentState, event: AgentEvent): AgentState {
  switch (event.type) {
    case "AgentRegistered":
      return {
        exists: true,
        accountId: event.data.accountId,
        status: "pending",
        keyVersion: event.data.keyVersion,
        ticket: event.data.ticket,
        lastSeenAt: null,
        webhook: event.data.webhookUrl ? "active" : null,
      };
    case "AgentConnected":
      // The token is burned for good: a connected agent has no ticket left.
      return { ...state, status: "connected", ticket: null };
    case "AgentUpdated":
      return { ...state, webhook: webhookAfter(state, event.data.changes) };
    case "AgentDisconnected":
      return { ...state, status: "disconnected", ticket: null };
    case "AgentSeen":
      return { ...state, lastSeenAt: event.data.at };
    case "WebhookSecretRotated":
    case "WebhookTestRequested":
      return state;
    case "WebhookDisabled":
      return { ...state, webhook: "disabled" };
    default:
      return unreachable(event);
  }
}

export const agentDecider: Decider<AgentCommand, AgentEvent, AgentState, AgentContext> = {
  initialState: () => ({
    exists: false,
    accountId: "",
    status: "pending",
    keyVersion: 0,
    ticket: null,
    lastSeenAt: null,
    webhook: null,
  }),
  evolve,
  decide,
};
