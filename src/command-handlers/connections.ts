import { randomUUID } from "node:crypto";
import { accountDecider } from "../../domain/account.js";
import { type ConnectionCommand, connectionDecider, pairKey, slotChanges } from "../../domain/connection.js";
import { limitsOf } from "../../domain/plans/catalog.js";
import { streams } from "../../domain/streams.js";
import type { StreamAppend } from "../eventstore/port.js";
import type { CommandDeps } from "./deps.js";
import { type Actor, accepted, appendAll, load, retryOnConflict, toAppend } from "./streams.js";

type Change = Exclude<ConnectionCommand, { type: "RequestConnection" }>["type"];

/**
 * Decides a connection command on the pair's stream and, in the same atomic append, takes or frees
 * a connection slot on each account it touches, so the plan's connection limit holds at append time.
 */
async function decideAndAppend(deps: CommandDeps, pair: string, command: ConnectionCommand, actor: Actor) {
  const connection = await load(deps.store, connectionDecider, streams.connection(pair));
  const events = accepted(connectionDecider.decide(command, connection.state, undefined));
  const appends: StreamAppend[] = [toAppend(connection, events, actor, command.now)];
  for (const { accountId, delta } of slotChanges(connection.state, events)) {
    const account = await load(deps.store, accountDecider, streams.account(accountId));
    const slot = accepted(
      accountDecider.decide(
        delta === 1
          ? { type: "CountConnection", connectionId: command.connectionId }
          : { type: "ReleaseConnection", connectionId: command.connectionId },
        account.state,
        { limits: limitsOf(account.state.plan) },
      ),
    );
    appends.push(toAppend(account, slot, actor, command.now));
  }
  return appendAll(deps.store, appends);
}

export async function requestConnection(
  deps: CommandDeps,
  requesterAccountId: string,
  inviteeAccountId: string,
  actor: Actor,
) {
  return retryOnConflict(async () => {
    const connectionId = randomUUID();
    const now = deps.clock.now().toISOString();
    const position = await decideAndAppend(
      deps,
      pairKey(requesterAccountId, inviteeAccountId),
      { type: "RequestConnection", connectionId, requesterAccountId, inviteeAccountId, now },
      actor,
    );
    return { position, connectionId };
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
  return retryOnConflict(async () => {
    const now = deps.clock.now().toISOString();
    const command = { type: change, connectionId, byAccountId, now } as ConnectionCommand;
    return { position: await decideAndAppend(deps, pair, command, actor) };
  });
}
