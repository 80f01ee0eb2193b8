import type { Connection } from "@handoff/sdk";
import { confirmed } from "../confirm.js";
import { accountClient } from "../environment.js";
import { printJson } from "../output.js";
import { printList } from "../table.js";

/** `handoff connections list [--json]`: the account's connections, newest first. */
export async function connectionsList(values: { json?: boolean }): Promise<number> {
  const connections = await accountClient("cli").connections();
  printList<Connection>(
    values.json,
    { connections },
    connections,
    [
      { heading: "ID", value: (c) => c.id },
      { heading: "STATUS", value: (c) => c.status },
      { heading: "DIRECTION", value: (c) => c.direction },
      { heading: "PEER", value: (c) => `${c.peer_account.name} <${c.peer_account.email_masked}>` },
      { heading: "UPDATED", value: (c) => c.updated_at },
    ],
    "No connections: handoff connections invite ADDRESS invites another account.",
  );
  return 0;
}

/** `handoff connections invite ACCOUNT`: by e-mail address or account UUID. */
export async function connectionsInvite(_values: unknown, [account]: string[]): Promise<number> {
  printJson(await accountClient("cli").inviteConnection(account ?? ""));
  return 0;
}

/** `handoff connections accept ID`. */
export async function connectionsAccept(_values: unknown, [id]: string[]): Promise<number> {
  printJson(await accountClient("cli").answerConnection(id ?? "", "accept"));
  return 0;
}

/** `handoff connections decline ID`. */
export async function connectionsDecline(_values: unknown, [id]: string[]): Promise<number> {
  printJson(await accountClient("cli").answerConnection(id ?? "", "decline"));
  return 0;
}

/** `handoff connections remove ID [--yes]`: ends it for both sides; cross-account sends stop at once. */
export async function connectionsRemove(values: { yes?: boolean }, [id]: string[]): Promise<number> {
  if (!(await confirmed(`End connection ${id}`, values.yes))) return 1;
  printJson(await accountClient("cli").removeConnection(id ?? ""));
  return 0;
}
