import type { HandoffClient } from "@handoff/sdk";
import { agentClient } from "../environment.js";
import { integerOption, required } from "../options.js";
import { printJson } from "../output.js";

/** Decisions 3.11: the inbox long-polls for at most 30 seconds. */
export const MAX_INBOX_WAIT_SECONDS = 30;

/** Every transfer in the agent's inbox, page after page; only the first request waits. */
export async function wholeInbox(client: HandoffClient, waitSeconds = 0) {
  const transfers = [];
  let page = await client.inbox({ wait: waitSeconds });
  transfers.push(...page.transfers);
  while (page.has_more && page.next_cursor) {
    page = await client.inbox({ cursor: page.next_cursor });
    transfers.push(...page.transfers);
  }
  return { transfers };
}

/** `handoff inbox --identity FILE [--wait SECONDS]` (decisions 5.5): prints `{transfers}`. */
export async function inbox(values: { identity?: string; wait?: string }): Promise<number> {
  const identity = required(values.identity, "--identity FILE");
  const wait = integerOption(values.wait, "--wait", 0, MAX_INBOX_WAIT_SECONDS);
  const client = await agentClient(identity, "cli");
  printJson(await wholeInbox(client, wait));
  return 0;
}
