import { randomUUID } from "node:crypto";
import { type ConnectionCommand, connectionDecider, pairKey, slotChanges } from "../../domain/connection.js";
import { streams } from "../../domain/streams.js";
import { decideOnAccount } from "./account-stream.js";
import type { CommandDeps } from "./deps.js";
import { handle, type Turn } from "./handle.js";
import type { Actor } from "./streams.js";

type Change = Exclude<ConnectionCommand, { type: "RequestConnection" }>["type"];

/**
 * Decides a connection command on the pair's stream and, in the same atomic append, takes or frees
 * a connection slot on each account it touches, so the plan's connection limit holds at append time.
 */
async function decideConnection(turn: Turn, pair: string, command: ConnectionCommand) {
  const connection = await turn.load(connectionDecider, streams.connection(pair));
  const events = turn.decide(connectionDecider, connection, command, undefined);
  for (const { accountId, delta } of slotChanges(connection.state, events)) {
    await decideOnAccount(
      turn,
      accountId,
      delta === 1
        ? { type: "CountConnection", connectionId: command.connectionId }
        : { type: "ReleaseConnection", connectionId: command.connectionId },
    );
  }
}

export async function requestConnection(
  deps: CommandDeps,
  requesterAccountId: string,
  inviteeAccountId: string,
  actor: Actor,
) {
  return handle(deps, { actor }, async (turn) => {
    const connectionId = randomUUID();
    await decideConnection(turn, pairKey(requesterAccountId, inviteeAccountId), {
      type: "RequestConnection",
      connectionId,
      requesterAccountId,
      inviteeAccountId,
      now: turn.at(),
    });
    return { connectionId };
  });
}

/** Accept, decline or revoke a connection of the pair `pair`, as the account `byAccountId`. */
export async function changeConnection(
  deps: CommandDeps,
  pair: string,
  connectionId: string,
  change: Change,
  byAccountId: string,
  actor: Actor,
) {
  return handle(deps, { actor }, async (turn) => {
    const command = { type: change, connectionId, byAccountId, now: turn.at() } as ConnectionCommand;
    await decideConnection(turn, pair, command);
    return {};
  });
}
