import { randomUUID } from "node:crypto";
import { type BroadcastMessage, broadcastDecider } from "../../domain/broadcast.js";
import { streams } from "../../domain/streams.js";
import type { CommandDeps } from "./deps.js";
import { handle } from "./handle.js";
import type { Actor } from "./streams.js";

/**
 * Publishes a broadcast to the agents the caller resolved (every live agent, or the ones named):
 * the delivery list is recorded in the event, a snapshot of who receives it.
 */
export async function publishBroadcast(
  deps: CommandDeps,
  message: BroadcastMessage,
  agentIds: string[],
  actor: Actor,
) {
  return handle(deps, { actor }, async (turn) => {
    const broadcastId = randomUUID();
    const broadcast = await turn.load(broadcastDecider, streams.broadcast(broadcastId));
    turn.decide(
      broadcastDecider,
      broadcast,
      { type: "PublishBroadcast", broadcastId, ...message, agentIds, now: turn.at() },
      undefined,
    );
    return { broadcastId };
  });
}

/** Burns a broadcast for one agent. Reading it again records nothing and answers the same. */
export async function markBroadcastRead(
  deps: CommandDeps,
  broadcastId: string,
  agentId: string,
  actor: Actor,
) {
  return handle(deps, { actor: { ...actor, agentId } }, async (turn) => {
    const broadcast = await turn.load(broadcastDecider, streams.broadcast(broadcastId));
    turn.decide(
      broadcastDecider,
      broadcast,
      { type: "MarkBroadcastRead", agentId, now: turn.at() },
      undefined,
    );
    return {};
  });
}
