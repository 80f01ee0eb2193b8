import { type Decider, type Decision, refuse, unreachable } from "./decider.js";

/**
 * The trust link between two accounts (decisions 3.18). One stream per pair of accounts holds every
 * connection they ever had, one after another, so "one live connection per pair" is decided at
 * append time: two invitations racing for the same pair cannot both commit.
 */
export type ConnectionStatus = "pending" | "active" | "declined" | "revoked";

export type ConnectionEvent =
  | {
      type: "ConnectionRequested";
      data: {
        connectionId: string;
        requesterAccountId: string;
        inviteeAccountId: string;
        requestedAt: string;
      };
    }
  | { type: "ConnectionAccepted"; data: { connectionId: string; acceptedAt: string } }
  | { type: "ConnectionDeclined"; data: { connectionId: string; declinedAt: string } }
  | { type: "ConnectionRevoked"; data: { connectionId: string; byAccountId: string; revokedAt: string } };

export type ConnectionCommand =
  | {
      type: "RequestConnection";
      connectionId: string;
      requesterAccountId: string;
      inviteeAccountId: string;
      now: string;
    }
  | { type: "AcceptConnection"; connectionId: string; byAccountId: string; now: string }
  | { type: "DeclineConnection"; connectionId: string; byAccountId: string; now: string }
  | { type: "RevokeConnection"; connectionId: string; byAccountId: string; now: string };

export interface CurrentConnection {
  connectionId: string;
  requesterAccountId: string;
  inviteeAccountId: string;
  status: ConnectionStatus;
}

export interface ConnectionState {
  current: CurrentConnection | null;
}

/** The stream id part for a pair of accounts: the same whichever side asks. */
export function pairKey(a: string, b: string): string {
  return a < b ? `${a}_${b}` : `${b}_${a}`;
}

function decide(command: ConnectionCommand, state: ConnectionState): Decision<ConnectionEvent> {
  const current = state.current;
  if (command.type === "RequestConnection") {
    if (command.requesterAccountId === command.inviteeAccountId) {
      return refuse("SELF_CONNECTION", "an account cannot connect to itself");
    }
    if (current?.status === "active")
      return refuse("ALREADY_CONNECTED", "these accounts are already connected");
    if (current?.status === "pending")
      return refuse("INVITE_PENDING", "an invitation between these accounts is pending");
    const { connectionId, requesterAccountId, inviteeAccountId, now } = command;
    return [
      {
        type: "ConnectionRequested",
        data: { connectionId, requesterAccountId, inviteeAccountId, requestedAt: now },
      },
    ];
  }
  if (!current || current.connectionId !== command.connectionId)
    return refuse("NOT_FOUND", "no such connection");
  const party =
    command.byAccountId === current.requesterAccountId || command.byAccountId === current.inviteeAccountId;
  if (!party) return refuse("NOT_FOUND", "no such connection");
  switch (command.type) {
    case "AcceptConnection":
    case "DeclineConnection": {
      if (command.byAccountId !== current.inviteeAccountId) {
        return refuse("FORBIDDEN", "only the invited account can answer an invitation");
      }
      const accepting = command.type === "AcceptConnection";
      if (current.status === (accepting ? "active" : "declined")) return [];
      if (current.status !== "pending") return refuse("CONFLICT", `this connection is ${current.status}`);
      return accepting
        ? [
            {
              type: "ConnectionAccepted",
              data: { connectionId: current.connectionId, acceptedAt: command.now },
            },
          ]
        : [
            {
              type: "ConnectionDeclined",
              data: { connectionId: current.connectionId, declinedAt: command.now },
            },
          ];
    }
    case "RevokeConnection":
      if (current.status === "declined" || current.status === "revoked") return [];
      return [
        {
          type: "ConnectionRevoked",
          data: {
            connectionId: current.connectionId,
            byAccountId: command.byAccountId,
            revokedAt: command.now,
          },
        },
      ];
    default:
      return unreachable(command);
  }
}

function evolve(state: ConnectionState, event: ConnectionEvent): ConnectionState {
  switch (event.type) {
    case "ConnectionRequested": {
      const { connectionId, requesterAccountId, inviteeAccountId } = event.data;
      return { current: { connectionId, requesterAccountId, inviteeAccountId, status: "pending" } };
    }
    case "ConnectionAccepted":
      return withStatus(state, "active");
    case "ConnectionDeclined":
      return withStatus(state, "declined");
    case "ConnectionRevoked":
      return withStatus(state, "revoked");
    default:
      return unreachable(event);
  }
}

function withStatus(state: ConnectionState, status: ConnectionStatus): ConnectionState {
  return state.current ? { current: { ...state.current, status } } : state;
}

export const connectionDecider: Decider<ConnectionCommand, ConnectionEvent, ConnectionState> = {
  initialState: () => ({ current: null }),
  evolve,
  decide: (command, state) => decide(command, state),
};

/** The accounts whose connection count a decision changes: +1 to take a slot, -1 to free one. */
export function slotChanges(
  before: ConnectionState,
  events: ConnectionEvent[],
): { accountId: string; delta: 1 | -1 }[] {
  const changes: { accountId: string; delta: 1 | -1 }[] = [];
  let state = before;
  for (const event of events) {
    const previous = state.current;
    state = evolve(state, event);
    const now = state.current;
    if (!now) continue;
    if (event.type === "ConnectionRequested") changes.push({ accountId: now.requesterAccountId, delta: 1 });
    if (event.type === "ConnectionAccepted") changes.push({ accountId: now.inviteeAccountId, delta: 1 });
    if (event.type === "ConnectionDeclined") changes.push({ accountId: now.requesterAccountId, delta: -1 });
    if (event.type === "ConnectionRevoked") {
      changes.push({ accountId: now.requesterAccountId, delta: -1 });
      if (previous?.status === "active") changes.push({ accountId: now.inviteeAccountId, delta: -1 });
    }
  }
  return changes;
}
