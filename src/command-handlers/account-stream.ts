import { type AccountCommand, accountDecider } from "../../domain/account.js";
import { limitsOf } from "../../domain/plans/catalog.js";
import { streams } from "../../domain/streams.js";
import type { Turn } from "./handle.js";
import type { Actor } from "./streams.js";

/**
 * Loads an account's stream and decides a command on it against the limits of the account's own
 * plan (the roster of agents, API keys and connections); the events go in the turn's append.
 */
export async function decideOnAccount(turn: Turn, accountId: string, command: AccountCommand, actor?: Actor) {
  const account = await turn.load(accountDecider, streams.account(accountId));
  return turn.decide(accountDecider, account, command, { limits: limitsOf(account.state.plan) }, actor);
}
