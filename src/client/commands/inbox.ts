import type { HandoffClient, InboxPage } from "@handoff/sdk";
import { agentClient } from "../environment.js";
import { integerOption, required } from "../options.js";
import { printJson } from "../output.js";

/** Decisions 3.11: the inbox long-polls for at most 30 seconds. */
export const MAX_INBOX_WAIT_SECONDS = 30;

/** The agent's inbox page after page, to its end; only the first request waits. */
async function* inboxPages(client: HandoffClient, waitSeconds = 0): AsyncGenerator<InboxPage> {
  let page = await client.inbox({ wait: waitSeconds });
  yield page;
  while (page.has_more && page.next_cursor) {
    page = await client.inbox({ cursor: page.next_cursor });
    yield page;
  }
}

/** Every transfer in the agent's inbox. */
export async function wholeInbox(client: HandoffClient, waitSeconds = 0) {
  const transfers = [];
  for await (const page of inboxPages(client, waitSeconds)) transfers.push(...page.transfers);
  return { transfers };
}

/** The position after everything the agent's inbox holds now (undefined: the inbox's start). */
export async function inboxEnd(client: HandoffClient): Promise<string | undefined> {
  let end: string | undefined;
  for await (const page of inboxPages(client)) end = page.next_cursor ?? end;
  return end;
}

/** `handoff inbox --identity FILE [--wait SECONDS]` (decisions 5.5): prints `{transfers}`. */
export async function inbox(values: { identity?: string; wait?: string }): Promise<number> {
  const identity = required(values.identity, "--identity FILE");
  const wait = integerOption(values.wait, "--wait", 0, MAX_INBOX_WAIT_SECONDS);
  const client = await agentClient(identity, "cli");
  printJson(await wholeInbox(client, wait));
  return 0;
}
