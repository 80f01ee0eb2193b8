import { type Decider, type Decision, refuse, unreachable } from "./decider.js";

export const BROADCAST_SEVERITIES = ["info", "action_required", "critical"] as const;
export type BroadcastSeverity = (typeof BROADCAST_SEVERITIES)[number];

/** The severities the startup profile lists as urgent (spec 4.8). */
export const URGENT_SEVERITIES: readonly BroadcastSeverity[] = ["critical", "action_required"];

export interface BroadcastMessage {
  title: string;
  /** Markdown. */
  content: string;
  severity: BroadcastSeverity;
  affectedComponents: string[];
}

export type BroadcastEvent =
  | {
      type: "BroadcastPublished";
      data: BroadcastMessage & {
        broadcastId: string;
        /** The agents it is delivered to: a snapshot taken at publish time, never widened later. */
        agentIds: string[];
        publishedAt: string;
      };
    }
  | { type: "BroadcastRead"; data: { agentId: string; readAt: string } };

export type BroadcastCommand =
  | (BroadcastMessage & {
      type: "PublishBroadcast";
      broadcastId: string;
      /** Resolved by the caller (every live agent, or the ones the operator named). */
      agentIds: string[];
      now: string;
    })
  | { type: "MarkBroadcastRead"; agentId: string; now: string };

export interface BroadcastState {
  exists: boolean;
  /** The agents it was delivered to. */
  recipients: ReadonlySet<string>;
  /** The recipients that have read (burned) it. */
  readBy: ReadonlySet<string>;
}

function decide(command: BroadcastCommand, state: BroadcastState): Decision<BroadcastEvent> {
  switch (command.type) {
    case "PublishBroadcast": {
      if (state.exists) return refuse("CONFLICT", "this broadcast is already published");
      const { broadcastId, title, content, severity, affectedComponents, agentIds, now } = command;
      return [
        {
          type: "BroadcastPublished",
          data: {
            broadcastId,
            title,
            content,
            severity,
            affectedComponents,
            // Each agent receives it once, in the order given.
            agentIds: [...new Set(agentIds)],
            publishedAt: now,
          },
        },
      ];
    }
    case "MarkBroadcastRead": {
      // Not published, or not delivered to this agent: the same answer, so ids cannot be probed.
      if (!state.exists || !state.recipients.has(command.agentId))
        return refuse("NOT_FOUND", "no such broadcast for this agent");
      // Burned for good: reading again records nothing.
      if (state.readBy.has(command.agentId)) return [];
      return [{ type: "BroadcastRead", data: { agentId: command.agentId, readAt: command.now } }];
    }
    default:
      return unreachable(command);
  }
}

function evolve(state: BroadcastState, event: BroadcastEvent): BroadcastState {
  switch (event.type) {
    case "BroadcastPublished":
      return { exists: true, recipients: new Set(event.data.agentIds), readBy: new Set() };
    case "BroadcastRead":
      return { ...state, readBy: new Set(state.readBy).add(event.data.agentId) };
    default:
      return unreachable(event);
  }
}

export const broadcastDecider: Decider<BroadcastCommand, BroadcastEvent, BroadcastState> = {
  initialState: () => ({ exists: false, recipients: new Set(), readBy: new Set() }),
  evolve,
  decide,
};
