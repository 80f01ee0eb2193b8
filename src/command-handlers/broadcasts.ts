import { randomUUID } from "node:crypto";
import { type BroadcastMessage, broadcastDecider } from "../../domain/broadcast.js";
import { streams } from "../../domain/streams.js";
import type { CommandDeps } from "./deps.js";
import { type Actor, accepted, appendAll, load, retryOnConflict, toAppend } from "./streams.js";

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
  return retryOnConflict(async () => {
    const now = deps.clock.now().toISOString();
    const broadcastId = randomUUID();
    const broadcast = await load(deps.store, broadcastDecider, streams.broadcast(broadcastId));
    const events = accepted(
      broadcastDecider.decide(
        { type: "PublishBroadcast", broadcastId, ...message, agentIds, now },
        broadcast.state,
        undefined,
      ),
    );
    const position = await appendAll(deps.store, [toAppend(broadcast, events, actor, now)]);
    return { position, broadcastId };
  });
}

/** Burns a broadcast for one agent. Reading it again records nothing and answers the same. */
export async function markBroadcastRead(
  deps: CommandDeps,
  broadcastId: string,
  agentId: string,
  actor: Actor,
) {
  return retryOnConflict(async () => {
    const now = deps.clock.now().toISOString();
    const broadcast = await load(deps.store, broadcastDecider, streams.broadcast(broadcastId));
    const events = accepted(
      broadcastDecider.decide({ type: "MarkBroadcastRead", agentId, now }, broadcast.state, undefined),
    );
    const position = await appendAll(deps.store, [toAppend(broadcast, events, { ...actor, agentId }, now)]);
    return { position };
  });
}
