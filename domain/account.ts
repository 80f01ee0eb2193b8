import { type Decider, type Decision, refuse, unreachable } from "./decider.js";
import { type PlanLimits, withinLimit } from "./plan-limits.js";

/**
 * The account: its plan, and the roster that plan limits are counted on. Agent slugs and API
 * keys are reserved here in the same atomic append that creates the agent or key, so uniqueness
 * and limits hold at append time whatever the read models say.
 */
/** Decisions section 4: a sign-up makes a human account; the admin endpoint and the CLI an agent one. */
export type AccountKind = "human" | "agent";

export type AccountEvent =
  | {
      /**
       * `email` and `name` are sealed under the data key of person `personId` (decisions 6.5);
       * events written before sealing existed hold them in clear, with `personId` null.
       */
      type: "AccountCreated";
      /** `kind` is absent from events recorded before human accounts existed: those are agent accounts. */
      data: {
        accountId: string;
        email: string;
        name: string;
        personId: string | null;
        plan: string;
        createdAt: string;
        kind?: AccountKind;
      };
    }
  | { type: "AccountErased"; data: { accountId: string; erasureId: string; at: string } }
  | { type: "AccountPlanChanged"; data: { plan: string; previousPlan: string } }
  | { type: "AgentSlugReserved"; data: { agentId: string; slug: string; keyVersion: number } }
  | { type: "AgentSlugReleased"; data: { agentId: string; slug: string } }
  | { type: "ApiKeyAdded"; data: { keyId: string } }
  | { type: "ApiKeyRemoved"; data: { keyId: string } }
  | { type: "ConnectionCounted"; data: { connectionId: string } }
  | { type: "ConnectionReleased"; data: { connectionId: string } };

export type AccountCommand =
  | {
      type: "CreateAccount";
      accountId: string;
      email: string;
      name: string;
      personId: string | null;
      plan: string;
      kind: AccountKind;
      now: string;
    }
  | { type: "EraseAccount"; erasureId: string; now: string }
  | { type: "ChangePlan"; plan: string }
  | { type: "ReserveAgentSlug"; agentId: string; slug: string }
  | { type: "ReleaseAgentSlug"; agentId: string }
  | { type: "AddApiKey"; keyId: string }
  | { type: "RemoveApiKey"; keyId: string }
  | { type: "CountConnection"; connectionId: string }
  | { type: "ReleaseConnection"; connectionId: string };

export interface AccountState {
  exists: boolean;
  accountId: string;
  /** Erased (decisions 6.5): its personal data is gone, and nothing more may happen on it. */
  erased: boolean;
  plan: string;
  createdAt: string;
  /** Active slug → agent id. */
  slugs: Record<string, string>;
  /** Highest key version ever given to a slug: re-registering it rotates to the next one. */
  keyVersions: Record<string, number>;
  apiKeys: string[];
  /** Connections that hold one of the plan's connection slots (pending on the inviting side, or active). */
  connections: string[];
}

export interface AccountContext {
  limits: PlanLimits;
}

function slugOf(state: AccountState, agentId: string): string | undefined {
  return Object.keys(state.slugs).find((slug) => state.slugs[slug] === agentId);
}

function decide(
  command: AccountCommand,
  state: AccountState,
  context: AccountContext,
): Decision<AccountEvent> {
  if (command.type === "CreateAccount") {
    if (state.exists) return refuse("ACCOUNT_EXISTS", "the account already exists");
    const { accountId, email, name, personId, plan, kind, now } = command;
    return [
      { type: "AccountCreated", data: { accountId, email, name, personId, plan, createdAt: now, kind } },
    ];
  }
  if (!state.exists) return refuse("NOT_FOUND", "no such account");
  if (command.type === "EraseAccount") {
    if (state.erased) return [];
    return [
      {
        type: "AccountErased",
        data: { accountId: state.accountId, erasureId: command.erasureId, at: command.now },
      },
    ];
  }
  if (state.erased) return refuse("NOT_FOUND", "no such account");
  switch (command.type) {
    case "ChangePlan":
      if (command.plan === state.plan) return [];
      return [{ type: "AccountPlanChanged", data: { plan: command.plan, previousPlan: state.plan } }];
    case "ReserveAgentSlug": {
      if (state.slugs[command.slug] !== undefined) {
        return refuse("AGENT_ID_TAKEN", `agent_id '${command.slug}' already exists on this account`);
      }
      if (!withinLimit(Object.keys(state.slugs).length, context.limits.maxAgents)) {
        return refuse("QUOTA_EXCEEDED", `the ${state.plan} plan allows ${context.limits.maxAgents} agents`);
      }
      const keyVersion = (state.keyVersions[command.slug] ?? 0) + 1;
      return [
        { type: "AgentSlugReserved", data: { agentId: command.agentId, slug: command.slug, keyVersion } },
      ];
    }
    case "ReleaseAgentSlug": {
      const slug = slugOf(state, command.agentId);
      if (slug === undefined) return [];
      return [{ type: "AgentSlugReleased", data: { agentId: command.agentId, slug } }];
    }
    case "AddApiKey":
      if (!withinLimit(state.apiKeys.length, context.limits.maxApiKeys)) {
        return refuse(
          "KEY_LIMIT_REACHED",
          `the ${state.plan} plan allows ${context.limits.maxApiKeys} API keys`,
        );
      }
      return [{ type: "ApiKeyAdded", data: { keyId: command.keyId } }];
    case "RemoveApiKey":
      if (!state.apiKeys.includes(command.keyId)) return [];
      return [{ type: "ApiKeyRemoved", data: { keyId: command.keyId } }];
    case "CountConnection":
      if (state.connections.includes(command.connectionId)) return [];
      if (!withinLimit(state.connections.length, context.limits.maxConnections)) {
        return refuse(
          "QUOTA_EXCEEDED",
          `the ${state.plan} plan allows ${context.limits.maxConnections} connections`,
        );
      }
      return [{ type: "ConnectionCounted", data: { connectionId: command.connectionId } }];
    case "ReleaseConnection":
      if (!state.connections.includes(command.connectionId)) return [];
      return [{ type: "ConnectionReleased", data: { connectionId: command.connectionId } }];
    default:
      return unreachable(command);
  }
}

function evolve(state: AccountState, event: AccountEvent): AccountState {
  switch (event.type) {
    case "AccountCreated":
      return {
        ...state,
        exists: true,
        accountId: event.data.accountId,
        plan: event.data.plan,
        createdAt: event.data.createdAt,
      };
    case "AccountErased":
      return { ...state, erased: true };
    case "AccountPlanChanged":
      return { ...state, plan: event.data.plan };
    case "AgentSlugReserved":
      return {
        ...state,
        slugs: { ...state.slugs, [event.data.slug]: event.data.agentId },
        keyVersions: { ...state.keyVersions, [event.data.slug]: event.data.keyVersion },
      };
    case "AgentSlugReleased": {
      const { [event.data.slug]: _released, ...slugs } = state.slugs;
      return { ...state, slugs };
    }
    case "ApiKeyAdded":
      return { ...state, apiKeys: [...state.apiKeys, event.data.keyId] };
    case "ApiKeyRemoved":
      return { ...state, apiKeys: state.apiKeys.filter((id) => id !== event.data.keyId) };
    case "ConnectionCounted":
      return { ...state, connections: [...state.connections, event.data.connectionId] };
    case "ConnectionReleased":
      return { ...state, connections: state.connections.filter((id) => id !== event.data.connectionId) };
    default:
      return unreachable(event);
  }
}

export const accountDecider: Decider<AccountCommand, AccountEvent, AccountState, AccountContext> = {
  initialState: () => ({
    exists: false,
    accountId: "",
    erased: false,
    plan: "",
    createdAt: "",
    slugs: {},
    keyVersions: {},
    apiKeys: [],
    connections: [],
  }),
  evolve,
  decide,
};

/**
 * The e-mail reservation stream: a claim makes the address taken until the account is erased,
 * which releases it.
 */
export type EmailClaimEvent =
  | { type: "AccountEmailClaimed"; data: { accountId: string } }
  | { type: "AccountEmailReleased"; data: { accountId: string } };

/** True while an account holds the address. */
export function emailTaken(existing: EmailClaimEvent[]): boolean {
  return existing.at(-1)?.type === "AccountEmailClaimed";
}

export function claimEmail(existing: EmailClaimEvent[], accountId: string): Decision<EmailClaimEvent> {
  if (emailTaken(existing)) return refuse("ACCOUNT_EXISTS", "an account with this e-mail already exists");
  return [{ type: "AccountEmailClaimed", data: { accountId } }];
}

export function releaseEmail(existing: EmailClaimEvent[], accountId: string): EmailClaimEvent[] {
  const last = existing.at(-1);
  if (last?.type !== "AccountEmailClaimed" || last.data.accountId !== accountId) return [];
  return [{ type: "AccountEmailReleased", data: { accountId } }];
}

/** The kind of the account an AccountCreated event made (events from before humans: agent). */
export const accountKindOf = (data: { kind?: AccountKind }): AccountKind => data.kind ?? "agent";
