import { type Decider, type Decision, refuse, unreachable } from "./decider.js";

/**
 * A login session (decisions 4.3): started by a login whose password checked out, ended by logout
 * or by time. The bearer token is the server's signature over the session id
 * (src/security/human-tokens.ts): neither it nor a digest of it is ever in the log.
 */
export type SessionEvent =
  | {
      type: "SessionStarted";
      data: { sessionId: string; accountId: string; startedAt: string; expiresAt: string };
    }
  | { type: "SessionEnded"; data: { at: string } };

export type SessionCommand =
  | { type: "StartSession"; sessionId: string; accountId: string; now: string }
  | { type: "EndSession"; now: string };

export type SessionState =
  | { status: "none" }
  | { status: "open" | "ended"; accountId: string; expiresAt: string };

/** Decisions 4.3: a session lives 12 hours. */
export const SESSION_LIFETIME_MS = 12 * 3600 * 1000;

function decide(command: SessionCommand, state: SessionState): Decision<SessionEvent> {
  switch (command.type) {
    case "StartSession": {
      if (state.status !== "none") return refuse("CONFLICT", "this session already exists");
      const expiresAt = new Date(Date.parse(command.now) + SESSION_LIFETIME_MS).toISOString();
      return [
        {
          type: "SessionStarted",
          data: {
            sessionId: command.sessionId,
            accountId: command.accountId,
            startedAt: command.now,
            expiresAt,
          },
        },
      ];
    }
    case "EndSession":
      // Logging out of a session that has ended already changes nothing.
      if (state.status !== "open") return [];
      return [{ type: "SessionEnded", data: { at: command.now } }];
    default:
      return unreachable(command);
  }
}

function evolve(state: SessionState, event: SessionEvent): SessionState {
  switch (event.type) {
    case "SessionStarted":
      return { status: "open", accountId: event.data.accountId, expiresAt: event.data.expiresAt };
    case "SessionEnded":
      return state.status === "none" ? state : { ...state, status: "ended" };
    default:
      return unreachable(event);
  }
}

export const sessionDecider: Decider<SessionCommand, SessionEvent, SessionState, undefined> = {
  initialState: () => ({ status: "none" }),
  evolve,
  decide: (command, state) => decide(command, state),
};
